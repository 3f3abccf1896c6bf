#!/usr/bin/env bash
# A real single-node Apache Kafka broker (KRaft, broker + controller in one JVM) on 127.0.0.1:9092,
# built only from jars on Maven Central (no Docker, no archive download): Maven resolves
# org.apache.kafka:kafka_2.13 and its runtime classpath into the local repository (~/.m2), the jars
# are copied to .kafka/<version>/libs, a storage directory is formatted once, and the broker runs
# in the background with its pid and log under .kafka/.
#
#   scripts/kafka-broker.sh start    fetch if needed, format if needed, start, wait until it answers
#   scripts/kafka-broker.sh stop     stop the broker this script started
#   scripts/kafka-broker.sh status   exit 0 when running (prints pid and version), 3 when not
#   scripts/kafka-broker.sh reset    stop and delete the broker's data (topics, offsets); keeps the jars
#
# Environment (all optional):
#   KAFKA_VERSION        Kafka release to run (default 4.3.1; every org.apache.kafka artifact of that
#                        version must be on Central: 4.4.0's kafka-tools-api is missing there)
#   KAFKA_CACHE_DIR      where jars, config, data, pid and log live (default <repo>/.kafka)
#   KAFKA_STATE_DIR      config, data, pid and log of this broker (default <cache>/broker, pid and log in <cache>),
#                        for a second broker beside the first one (with its own KAFKA_PORT/KAFKA_CONTROLLER_PORT)
#   KAFKA_PORT           client listener port (default 9092); KAFKA_CONTROLLER_PORT (default 9093)
#   KAFKA_HEAP_OPTS      default -Xms128m -Xmx512m; KAFKA_JVM_OPTS for anything else
#   KAFKA_START_TIMEOUT  seconds to wait for the broker to answer (default 120)
#   MVN                  the Maven command (default mvn)
set -euo pipefail
# shellcheck source=lib/stop-process.sh
. "$(dirname "$0")/lib/stop-process.sh"

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
KAFKA_VERSION="${KAFKA_VERSION:-4.3.1}"
# The SLF4J 1.x -> Log4j 2 binding; Kafka itself brings log4j-api/log4j-core (2.25.4 for 4.3.1).
LOG4J_VERSION="${LOG4J_VERSION:-2.25.4}"
DEPENDENCY_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
CACHE="${KAFKA_CACHE_DIR:-$ROOT/.kafka}"
HOST=127.0.0.1
PORT="${KAFKA_PORT:-9092}"
CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-120}"
HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms128m -Xmx512m}"
MVN="${MVN:-mvn}"

DIST="$CACHE/$KAFKA_VERSION"   # pom.xml, libs/, tools/ (the readiness probe): depends on the version only
STATE="${KAFKA_STATE_DIR:-$CACHE/broker}"   # server.properties, log4j2.properties, data/
DATA="$STATE/data"
# A second broker (the fault tests' own) keeps its state, pid and log apart and shares the jars.
PID_FILE="${KAFKA_STATE_DIR:+$STATE/broker.pid}"; PID_FILE="${PID_FILE:-$CACHE/broker.pid}"
LOG_FILE="${KAFKA_STATE_DIR:+$STATE/broker.log}"; LOG_FILE="${LOG_FILE:-$CACHE/broker.log}"
CONFIG="$STATE/server.properties"

say() { echo "kafka-broker: $*"; }
die() { echo "kafka-broker: $*" >&2; exit 1; }

# Print the last lines of the broker log to stderr (for failures).
log_tail() {
  if [ -s "$LOG_FILE" ]; then
    echo "---- last 40 lines of $LOG_FILE ----" >&2
    tail -n 40 "$LOG_FILE" >&2
    echo "----" >&2
  fi
}

# The pid in the pid file when that process is alive and is our broker (guards against pid reuse).
broker_pid() {
  [ -f "$PID_FILE" ] || return 1
  local pid
  pid="$(cat "$PID_FILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "kafka.Kafka $CONFIG" || return 1
  echo "$pid"
}

port_open() {
  timeout 2 bash -c "exec 3<>/dev/tcp/$HOST/$1" 2>/dev/null
}

require_java() {
  command -v java >/dev/null || die "java not found (Kafka ${KAFKA_VERSION%%.*}.x needs Java 17+)"
  command -v javac >/dev/null || die "javac not found (a JDK is needed to build the readiness probe)"
  local major
  major="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
  [ "${major%%.*}" -ge 17 ] 2>/dev/null || die "Java 17+ needed, found specification version '${major}'"
}

# Resolve the broker's runtime classpath from Maven Central into ~/.m2 and copy it to $DIST/libs.
# A stamp holding the pom's checksum makes later runs skip Maven entirely.
fetch() {
  mkdir -p "$DIST"
  cat >"$DIST/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by scripts/kafka-broker.sh: the runtime classpath of a Kafka broker, from Maven Central. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.kafka-broker</groupId>
  <artifactId>kafka-broker-classpath</artifactId>
  <version>${KAFKA_VERSION}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>${KAFKA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>${LOG4J_VERSION}</version>
    </dependency>
  </dependencies>
</project>
EOF
  local sum
  sum="$(sha256sum "$DIST/pom.xml" | cut -d' ' -f1)"
  if [ -f "$DIST/libs.ok" ] && [ "$(cat "$DIST/libs.ok")" = "$sum" ] && [ -d "$DIST/libs" ]; then
    return
  fi
  command -v "$MVN" >/dev/null || die "Maven ($MVN) not found"
  say "resolving org.apache.kafka:kafka_2.13:$KAFKA_VERSION and its runtime classpath with Maven"
  local started=$SECONDS
  rm -rf "$DIST/libs.tmp" "$DIST/libs.ok"
  if ! "$MVN" -B -q --no-transfer-progress -f "$DIST/pom.xml" \
      "$DEPENDENCY_PLUGIN:copy-dependencies" -DincludeScope=runtime \
      -DoutputDirectory="$DIST/libs.tmp" >"$DIST/mvn.log" 2>&1; then
    tail -n 30 "$DIST/mvn.log" >&2
    die "Maven could not resolve Kafka $KAFKA_VERSION (is every org.apache.kafka artifact of it on Central?)"
  fi
  ls "$DIST/libs.tmp/kafka_2.13-$KAFKA_VERSION.jar" >/dev/null 2>&1 || die "kafka_2.13-$KAFKA_VERSION.jar missing after resolution"
  rm -rf "$DIST/libs" "$DIST/tools"
  mv "$DIST/libs.tmp" "$DIST/libs"
  echo "$sum" >"$DIST/libs.ok"
  say "fetched $(ls "$DIST/libs" | wc -l) jars in $((SECONDS - started))s"
}

# A tiny Java probe, compiled once against the fetched kafka-clients: retries a metadata request
# (describeCluster + listTopics) until the broker answers or the deadline passes, then warms up what
# the first client of a fresh broker would otherwise wait for: the producer-id manager (one record
# from an idempotent producer, acks=all, to a throw-away topic) and the group coordinator
# (__consumer_offsets).
build_probe() {
  mkdir -p "$DIST/tools"
  cat >"$DIST/tools/KafkaReady.java.new" <<'EOF'
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.AppInfoParser;

/** Usage: KafkaReady <bootstrap> <timeoutSeconds> [warm]. Exit 0 once the broker answers (and is warm). */
public class KafkaReady {
  static final String PROBE = "kafka-broker-sh-probe";

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[1]));
    boolean warm = args.length > 2 && args[2].equals("warm");
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
    p.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "1000");
    try (Admin admin = Admin.create(p)) {
      String ready = null;
      Exception last = null;
      do {
        try {
          DescribeClusterResult cluster = admin.describeCluster();
          Collection<Node> nodes = cluster.nodes().get(6, TimeUnit.SECONDS);
          Node controller = cluster.controller().get(6, TimeUnit.SECONDS);
          String id = cluster.clusterId().get(6, TimeUnit.SECONDS);
          int topics = admin.listTopics().names().get(6, TimeUnit.SECONDS).size();
          if (!nodes.isEmpty() && controller != null && !controller.isEmpty()) {
            ready = "Kafka " + AppInfoParser.getVersion() + " ready on " + bootstrap + " (cluster " + id + ", "
                + nodes.size() + " broker(s), " + topics + " topic(s))";
            break;
          }
        } catch (Exception e) {
          last = e;
        }
        Thread.sleep(500);
      } while (System.nanoTime() < deadline);
      if (ready == null) {
        System.err.println("no metadata answer from " + bootstrap + ": " + last);
        System.exit(1);
      }
      if (warm) warmUp(admin, bootstrap);
      System.out.println(ready);
    }
  }

  static void warmUp(Admin admin, String bootstrap) throws Exception {
    try {
      admin.createTopics(List.of(new NewTopic(PROBE, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) throw e;
    }
    Properties pp = new Properties();
    pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    pp.put(ProducerConfig.ACKS_CONFIG, "all");
    pp.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
    pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
    pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
    pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
      producer.send(new ProducerRecord<>(PROBE, "probe")).get(35, TimeUnit.SECONDS);
    }
    admin.listConsumerGroupOffsets(PROBE).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
    admin.deleteTopics(List.of(PROBE)).all().get(30, TimeUnit.SECONDS);
  }
}
EOF
  if cmp -s "$DIST/tools/KafkaReady.java.new" "$DIST/tools/KafkaReady.java" && [ -f "$DIST/tools/KafkaReady.class" ]; then
    rm -f "$DIST/tools/KafkaReady.java.new"
    return
  fi
  mv -f "$DIST/tools/KafkaReady.java.new" "$DIST/tools/KafkaReady.java"
  rm -f "$DIST/tools/"*.class
  javac -nowarn -cp "$DIST/libs/*" -d "$DIST/tools" "$DIST/tools/KafkaReady.java" >&2 || die "could not compile the readiness probe"
}

probe() { # probe <timeoutSeconds> [warm]
  java -Xmx64m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    -Dlog4j2.configurationFile="$STATE/probe-log4j2.properties" \
    -cp "$DIST/tools:$DIST/libs/*" KafkaReady "$HOST:$PORT" "$@"
}

write_config() {
  mkdir -p "$STATE" "$DATA"
  cat >"$CONFIG" <<EOF
# Written by scripts/kafka-broker.sh: one KRaft node, broker and controller, loopback only.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$PORT,CONTROLLER://$HOST:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$HOST:$PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$DATA
num.partitions=1
default.replication.factor=1
auto.create.topics.enable=false
delete.topic.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# Small thread pools: a test broker on a shared 2-core machine.
num.network.threads=2
num.io.threads=2
background.threads=2
num.recovery.threads.per.data.dir=1
log.cleaner.threads=1
EOF
  cat >"$STATE/log4j2.properties" <<'EOF'
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.request.additivity = false
logger.request.appenderRef.out.ref = OUT
EOF
  cat >"$STATE/probe-log4j2.properties" <<'EOF'
status = error
appender.err.type = Console
appender.err.name = ERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %p %m (%c)%n
rootLogger.level = OFF
rootLogger.appenderRef.err.ref = ERR
EOF
}

format_storage() {
  [ -f "$DATA/meta.properties" ] && return
  local cluster_id
  cluster_id="$(java -Xmx128m -Dlog4j2.configurationFile="$STATE/probe-log4j2.properties" \
    -cp "$DIST/libs/*" kafka.tools.StorageTool random-uuid)" || die "StorageTool random-uuid failed"
  say "formatting $DATA (cluster id $cluster_id)"
  java -Xmx256m -Dlog4j2.configurationFile="$STATE/probe-log4j2.properties" \
    -cp "$DIST/libs/*" kafka.tools.StorageTool format --ignore-formatted \
    -t "$cluster_id" -c "$CONFIG" >"$STATE/format.log" 2>&1 || { cat "$STATE/format.log" >&2; die "storage format failed"; }
  [ -f "$DATA/meta.properties" ] || { cat "$STATE/format.log" >&2; die "storage format wrote no meta.properties"; }
}

start() {
  local pid
  if pid="$(broker_pid)"; then
    say "already running (pid $pid) on $HOST:$PORT"
    return
  fi
  rm -f "$PID_FILE"
  if port_open "$PORT" || port_open "$CONTROLLER_PORT"; then
    die "$HOST:$PORT or $HOST:$CONTROLLER_PORT is already in use by a process this script did not start (see: ss -ltnp)"
  fi
  require_java
  fetch
  build_probe
  write_config
  format_storage

  [ -f "$LOG_FILE" ] && mv -f "$LOG_FILE" "$LOG_FILE.1"
  say "starting Kafka $KAFKA_VERSION on $HOST:$PORT (log: $LOG_FILE)"
  local started=$SECONDS
  # setsid: the broker outlives this shell and is not hit by a Ctrl-C aimed at the caller.
  # shellcheck disable=SC2086
  setsid java $HEAP_OPTS -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$STATE/log4j2.properties" ${KAFKA_JVM_OPTS:-} \
    -cp "$DIST/libs/*" kafka.Kafka "$CONFIG" >"$LOG_FILE" 2>&1 </dev/null 9>&- &
  echo $! >"$PID_FILE"
  if ! broker_pid >/dev/null; then
    sleep 1
    broker_pid >/dev/null || { log_tail; rm -f "$PID_FILE"; die "the broker process exited at once"; }
  fi

  # Wait for the listener (cheap), then for a metadata answer, within one bounded budget.
  local deadline=$((SECONDS + START_TIMEOUT))
  until port_open "$PORT"; do
    broker_pid >/dev/null || { log_tail; rm -f "$PID_FILE"; die "the broker exited during startup"; }
    [ "$SECONDS" -lt "$deadline" ] || { log_tail; stop >&2; die "$HOST:$PORT not listening after ${START_TIMEOUT}s"; }
    sleep 1
  done
  local left=$((deadline - SECONDS))
  [ "$left" -ge 10 ] || left=10
  if ! probe "$left" warm; then
    log_tail
    stop >&2
    die "the broker did not answer metadata requests (or failed the warm-up produce) within ${START_TIMEOUT}s"
  fi
  say "started in $((SECONDS - started))s (pid $(cat "$PID_FILE"))"
}

stop() {
  local pid
  if ! pid="$(broker_pid)"; then
    rm -f "$PID_FILE"
    say "not running"
    return
  fi
  stop_process "$pid" 60
  rm -f "$PID_FILE"
  say "stopped"
}

status() {
  local pid
  if pid="$(broker_pid)"; then
    say "running (pid $pid), Kafka $KAFKA_VERSION on $HOST:$PORT, log $LOG_FILE"
    return 0
  fi
  say "not running"
  return 3
}

reset() {
  stop
  rm -rf "$STATE"
  say "deleted $STATE"
}

cmd="${1:-}"
case "$cmd" in
  start | stop | reset)
    mkdir -p "$CACHE"
    # One start/stop at a time (two CI steps, or a developer and a test run).
    exec 9>"$CACHE/lock"
    flock -w 300 9 || die "another kafka-broker.sh held $CACHE/lock for 300s"
    "$cmd"
    ;;
  status) status ;;
  *)
    echo "usage: $0 start|stop|status|reset" >&2
    exit 2
    ;;
esac
