# zsh -f capture.zsh DIR LINE: the words zsh's completion offers for LINE,
# one a line, with DIR on fpath (it holds _vpnctl). compadd is wrapped to
# print each candidate it is given, and ^T runs completion in a pty.
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PS1='>'; fpath=(${(q)1} \$fpath); autoload -Uz compinit; compinit -u -d ${(q)1}/zcompdump"
zpty -w z 'compadd () { local -a __a; local __w; builtin compadd -O __a "$@"; for __w in $__a; do print -r -- "<<$__w>>" >/dev/tty; done; builtin compadd "$@"; }'
zpty -w z 'zle -C __capture complete-word _main_complete; bindkey "^T" __capture'
zpty -n -w z "$2"$'\x14'
local out all="" quiet=0
for i in {1..100}; do   # at most 10 s; done after 0.5 s without output once something came
  sleep 0.1
  if zpty -r -t z out 2>/dev/null; then
    all+=$out; quiet=0
    while zpty -r -t z out 2>/dev/null; do all+=$out; done
  else
    (( quiet++ ))
    [[ $all == *'<<'* ]] && (( quiet >= 5 )) && break
  fi
done
zpty -d z
# The typed line echoes the wrapper's own text; only candidates are <<...>>.
print -r -- "$all" | tr -d '\r' | grep -ao '<<[^<>]*>>' | sed 's/^<<//; s/>>$//' | grep -vxF '$__w' | sort -u
