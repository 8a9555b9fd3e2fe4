import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.regex.Pattern;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka Streams' own wordcount, the reference iqgate's is measured against in bench:processing:
 * the same input and topology (lines, lower-cased runs of letters and digits, groupBy(word)
 * through a repartition topic, count into the `word-counts` store, updates to the output topic),
 * exactly-once v2, one stream thread, a commit every 100 ms, everything else at Kafka Streams'
 * defaults (RocksDB store, 10 MB record cache).
 *
 * Usage: java -cp 'libs/*' WordCount.java <brokers> <input> <output> <application.id> <state.dir>
 *
 * Talks to its parent (bench/kstreams-wordcount.ts) on stdio, one JSON object per line:
 * it prints {"event":"starting","cpuNanos":…} first thing in main() and
 * {"event":"first-commit",…} once its stream thread's commit-total metric is above 0 (polled every
 * 5 ms), answers each "cpu" line on stdin with {"event":"cpu",…}, and closes the streams and
 * exits when stdin ends. It exits with 1 as soon as Kafka Streams goes to ERROR (a stream thread
 * died), so that its parent hears of a failure at once rather than at its timeout.
 */
public final class WordCount {
  private static final Pattern SEPARATORS = Pattern.compile("[^a-z0-9]+");

  /** The same rule as wordsOf() in examples/wordcount/wordcount-topology.ts. */
  static List<String> words(String line) {
    List<String> words = new ArrayList<>();
    for (String word : SEPARATORS.split(line.toLowerCase(Locale.ROOT))) {
      if (!word.isEmpty()) words.add(word);
    }
    return words;
  }

  private static long cpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }

  private static synchronized void say(String event) {
    System.out.println("{\"event\":\"" + event + "\",\"cpuNanos\":" + cpuNanos() + "}");
    System.out.flush();
  }

  private static double commits(KafkaStreams streams) {
    double total = 0;
    for (Metric metric : streams.metrics().values()) {
      MetricName name = metric.metricName();
      if (name.group().equals("stream-thread-metrics") && name.name().equals("commit-total")) {
        total += ((Number) metric.metricValue()).doubleValue();
      }
    }
    return total;
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 5) {
      System.err.println("usage: WordCount <brokers> <input> <output> <application.id> <state.dir>");
      System.exit(2);
    }
    say("starting");
    try {
      run(args);
    } catch (Throwable error) {
      error.printStackTrace();
      System.exit(1);
    }
    System.exit(0);
  }

  private static void run(String[] args) throws Exception {
    Properties config = new Properties();
    config.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    config.put(StreamsConfig.APPLICATION_ID_CONFIG, args[3]);
    config.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
    config.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    config.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    config.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    config.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);

    StreamsBuilder builder = new StreamsBuilder();
    builder.<String, String>stream(args[1])
        .flatMapValues(WordCount::words)
        .groupBy((key, word) -> word)
        .count(Materialized.as("word-counts"))
        .toStream()
        .to(args[2], Produced.with(Serdes.String(), Serdes.Long()));

    KafkaStreams streams = new KafkaStreams(builder.build(), config);
    streams.setUncaughtExceptionHandler(error -> {
      error.printStackTrace();
      return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    streams.setStateListener((now, before) -> {
      if (now == KafkaStreams.State.ERROR) {
        System.err.println("Kafka Streams went from " + before + " to ERROR");
        Runtime.getRuntime().halt(1);
      }
    });
    Thread parent = new Thread(() -> {
      try {
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = stdin.readLine(); line != null; line = stdin.readLine()) {
          if (line.trim().equals("cpu")) say("cpu");
        }
      } catch (java.io.IOException e) {
        e.printStackTrace();
      }
    }, "parent");
    parent.setDaemon(true);
    parent.start();
    streams.start();
    while (parent.isAlive() && commits(streams) == 0) Thread.sleep(5);
    if (parent.isAlive()) say("first-commit");
    parent.join();
    streams.close();
  }
}
