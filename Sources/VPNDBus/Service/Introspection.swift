/// The introspection XML: the interfaces as dbus/org.vpnctl.VPN1.xml
/// installs them (a unit test keeps the two the same), and each node's
/// children.
enum Introspection {
    static let header = """
    <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
     "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
    """

    static let standard = """
      <interface name="org.freedesktop.DBus.Introspectable">
        <method name="Introspect">
          <arg name="xml" type="s" direction="out"/>
        </method>
      </interface>
      <interface name="org.freedesktop.DBus.Peer">
        <method name="Ping"/>
      </interface>
      <interface name="org.freedesktop.DBus.Properties">
        <method name="Get">
          <arg name="interface" type="s" direction="in"/>
          <arg name="name" type="s" direction="in"/>
          <arg name="value" type="v" direction="out"/>
        </method>
        <method name="GetAll">
          <arg name="interface" type="s" direction="in"/>
          <arg name="properties" type="a{sv}" direction="out"/>
        </method>
        <method name="Set">
          <arg name="interface" type="s" direction="in"/>
          <arg name="name" type="s" direction="in"/>
          <arg name="value" type="v" direction="in"/>
        </method>
        <signal name="PropertiesChanged">
          <arg name="interface" type="s"/>
          <arg name="changed" type="a{sv}"/>
          <arg name="invalidated" type="as"/>
        </signal>
      </interface>

    """

    static let manager = """
      <interface name="org.vpnctl.VPN1.Manager">
        <method name="ListProfiles">
          <arg name="profiles" type="ao" direction="out"/>
        </method>
        <method name="GetProfileByName">
          <arg name="name" type="s" direction="in"/>
          <arg name="profile" type="o" direction="out"/>
        </method>
        <signal name="ProfileAdded">
          <arg name="profile" type="o"/>
        </signal>
        <signal name="ProfileRemoved">
          <arg name="profile" type="o"/>
        </signal>
      </interface>

    """

    /// The manager's org.freedesktop.DBus.ObjectManager (the profiles as
    /// its children): a standard interface, so not in org.vpnctl.VPN1.xml.
    static let objectManager = """
      <interface name="org.freedesktop.DBus.ObjectManager">
        <method name="GetManagedObjects">
          <arg name="objects" type="a{oa{sa{sv}}}" direction="out"/>
        </method>
        <signal name="InterfacesAdded">
          <arg name="object" type="o"/>
          <arg name="interfaces" type="a{sa{sv}}"/>
        </signal>
        <signal name="InterfacesRemoved">
          <arg name="object" type="o"/>
          <arg name="interfaces" type="as"/>
        </signal>
      </interface>

    """

    static let profile = """
      <interface name="org.vpnctl.VPN1.Profile">
        <method name="Start">
          <arg name="options" type="a{sv}" direction="in"/>
        </method>
        <method name="Stop"/>
        <method name="Toggle"/>
        <method name="Stats">
          <arg name="stats" type="a{sv}" direction="out"/>
        </method>
        <method name="Verify">
          <arg name="probe" type="s" direction="in"/>
          <arg name="result" type="a{sv}" direction="out"/>
        </method>
        <property name="Id" type="s" access="read"/>
        <property name="Name" type="s" access="read"/>
        <property name="Protocol" type="s" access="read"/>
        <property name="Enabled" type="b" access="read"/>
        <property name="Status" type="(us)" access="read"/>
        <property name="ConnectedSince" type="s" access="read"/>
        <property name="Interface" type="s" access="read"/>
        <property name="LastDisconnectError" type="(iss)" access="read"/>
        <property name="OnDemand" type="b" access="read"/>
      </interface>

    """

    /// One node: the standard interfaces, `interfaces`, and the children's names.
    static func node(_ interfaces: String, children: [String]) -> String {
        header + "\n<node>\n" + standard + interfaces + children.map { "  <node name=\"\($0)\"/>\n" }.joined() + "</node>\n"
    }
}
