import java.util.ArrayList;
import java.util.List;

// Test program for tests/pipeline/analyze_dump_test.cc and tests/daemon/escalation_test.cc: a static
// list of sessions, each holding a secret string and a byte[] of 1000 bytes filled with a marker,
// then waits to be dumped.
// Prints "ready" on stdout once the heap holds `count` sessions (args[0], default 2000).
public class HwSecretHolder {
  static final List<HwSession> SESSIONS = new ArrayList<>();

  public static void main(String[] args) throws Exception {
    int count = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
    for (int i = 0; i < count; ++i) SESSIONS.add(new HwSession("hw-secret-token-" + i));
    System.out.println("ready");
    System.out.flush();
    Thread.sleep(600_000);
  }
}

class HwSession {
  final String token;
  final byte[] payload = new byte[1000];

  HwSession(String token) {
    this.token = token;
    java.util.Arrays.fill(payload, (byte) 'Q');
  }
}
