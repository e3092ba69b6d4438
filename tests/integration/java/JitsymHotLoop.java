// A hot method for the JIT to compile: says "ready", then spins until stdin closes.
public class JitsymHotLoop {
  static long jitsymSpin(long n) {
    long acc = 0;
    for (long i = 0; i < n; i++) acc = acc * 31 + (i ^ (acc >>> 7));
    return acc;
  }

  public static void main(String[] args) throws Exception {
    Thread spinner = new Thread(() -> {
      long sink = 0;
      while (true) {
        sink += jitsymSpin(100000);
        if (sink == 42) System.out.println(sink);
      }
    });
    spinner.setDaemon(true);
    spinner.start();
    System.out.println("ready " + ProcessHandle.current().pid());
    System.out.flush();
    while (System.in.read() >= 0) {
    }
  }
}
