# Shared by bench/realapp/tomcat.sh and bench/analysis/make_tomcat_dump.sh (source it, do not run it):
# a private CATALINA_BASE for Debian 12's Tomcat 10 with its examples web application, on a loopback port.
# Needs the packages tomcat10 and tomcat10-examples.

TOMCAT_HOME=/usr/share/tomcat10
TOMCAT_EXAMPLES=/usr/share/tomcat10-examples/examples
TOMCAT_MAIN_CLASS=org.apache.catalina.startup.Bootstrap

# tomcat_prepare_base BASE PORT: a CATALINA_BASE in BASE (a copy of /etc/tomcat10) whose HTTP connector listens
# on 127.0.0.1:PORT, with no shutdown port (stop Tomcat with a signal), no session persistence (stopping must
# not serialise GBs of sessions to SESSIONS.ser), the examples application at /examples, and that application's
# SessionListener at WARNING (it logs every attribute value at INFO). Returns 1 if server.xml could not be
# edited.
tomcat_prepare_base() {
  local base=$1 port=$2
  mkdir -p "$base"/{logs,temp,work,webapps}
  cp -r /etc/tomcat10 "$base/conf"
  sed -i -e "s/<Connector port=\"8080\"/<Connector address=\"127.0.0.1\" port=\"$port\"/" \
         -e 's/<Server port="8005"/<Server port="-1"/' "$base/conf/server.xml"
  grep -q "port=\"$port\"" "$base/conf/server.xml" || return 1
  sed -i 's#^<Context>#<Context>\n    <Manager pathname="" />#' "$base/conf/context.xml"
  echo 'org.apache.catalina.core.ContainerBase.[Catalina].[localhost].[/examples].level = WARNING' \
    >>"$base/conf/logging.properties"
  # /etc/tomcat10/Catalina/localhost exists only once the package's own service has run long enough to
  # create it (deps.sh stops that service right after installation, so on a fresh machine it may not).
  mkdir -p "$base/conf/Catalina/localhost"
  [[ -f $base/conf/Catalina/localhost/examples.xml ]] ||
    printf '<Context path="/examples" docBase="%s">\n  <Resources allowLinking="true"/>\n</Context>\n' \
      "$TOMCAT_EXAMPLES" >"$base/conf/Catalina/localhost/examples.xml"
}

# tomcat_wait_ready URL PGID [SECONDS]: waits until URL answers (Tomcat started in process group PGID);
# returns 1 if Tomcat exits or does not answer in time (default 120 s).
tomcat_wait_ready() {
  local url=$1 pgid=$2 limit=${3:-120} i
  for ((i = 0; i < limit; i++)); do
    curl -fs -o /dev/null "$url" && return 0
    kill -0 "$pgid" 2>/dev/null || return 1
    sleep 1
  done
  curl -fs -o /dev/null "$url"
}

# tomcat_jvm_pid PGID: the pid of Tomcat's JVM in process group PGID (`catalina.sh run` execs java).
tomcat_jvm_pid() { pgrep -s "$1" -f "$TOMCAT_MAIN_CLASS" | head -1; }
