#!/usr/bin/env python3
# term-answer.py SECONDS [PROMPT ANSWER]... -- COMMAND [ARGS]...
#
# Runs COMMAND on a pseudo-terminal of its own, the way a person at a
# terminal would: each time PROMPT appears in what it wrote, ANSWER is typed
# (with a line break; "^C" is Ctrl-C itself). Writes the whole screen
# transcript to stdout, then "echo-after: on|off" (whether the terminal
# echoes again once COMMAND is done), and exits with COMMAND's exit status
# (128+N for a signal N). Bounded: COMMAND is killed after SECONDS.
import os, pty, select, signal, sys, termios, time

def main():
    args = sys.argv[1:]
    seconds = float(args.pop(0))
    sep = args.index("--")
    pairs, command = args[:sep], args[sep + 1:]
    script = [(pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2)]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    deadline = time.monotonic() + seconds
    seen = b""
    at = 0
    status = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            sys.stdout.write("term-answer: timed out after %s s\n" % seconds)
            break
        r, _, _ = select.select([fd], [], [], min(left, 0.2))
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                break
            seen += chunk
        while script and script[0][0].encode() in seen[at:]:
            prompt, answer = script.pop(0)
            at = seen.index(prompt.encode(), at) + len(prompt)
            # The prompt is written before echo goes off: wait until it is.
            time.sleep(0.3)
            os.write(fd, b"\x03" if answer == "^C" else answer.encode() + b"\n")
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            # What is still in the terminal's buffer.
            while select.select([fd], [], [], 0.1)[0]:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            break
    try:
        echo = "on" if termios.tcgetattr(fd)[3] & termios.ECHO else "off"
    except termios.error:
        echo = "unknown"
    if status is None:
        _, status = os.waitpid(pid, 0)
    sys.stdout.write(seen.decode("utf-8", "replace").replace("\r\n", "\n"))
    sys.stdout.write("\necho-after: %s\n" % echo)
    if script:
        sys.stdout.write("term-answer: never saw the prompt %r\n" % script[0][0])
    code = os.waitstatus_to_exitcode(status)
    sys.exit(128 - code if code < 0 else code)

main()
