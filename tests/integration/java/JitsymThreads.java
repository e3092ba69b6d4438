// Hot work on several threads that are not the main one: each worker thread (named
// jitsymWorker-N, which the JVM gives the native thread as its comm) spins in its own method
// for the given milliseconds, then waits. Prints "ready <pid>" once all are done, and exits
// when stdin closes. Usage: java JitsymThreads THREADS MS
import java.util.concurrent.CountDownLatch;

public class JitsymThreads {
  static long jitsymThreadSpin0(long n) {
    long acc = 0;
    for (long i = 0; i < n; i++) acc = acc * 31 + (i ^ (acc >>> 7));
    return acc;
  }

  static long jitsymThreadSpin1(long n) {
    long acc = 1;
    for (long i = 0; i < n; i++) acc = acc * 17 + (i ^ (acc >>> 5));
    return acc;
  }

  static long jitsymThreadSpin2(long n) {
    long acc = 2;
    for (long i = 0; i < n; i++) acc = acc * 13 + (i ^ (acc >>> 3));
    return acc;
  }

  static long spin(int which, long n) {
    switch (which % 3) {
      case 0: return jitsymThreadSpin0(n);
      case 1: return jitsymThreadSpin1(n);
      default: return jitsymThreadSpin2(n);
    }
  }

  public static void main(String[] args) throws Exception {
    final int threads = Integer.parseInt(args[0]);
    final long ms = Long.parseLong(args[1]);
    final CountDownLatch done = new CountDownLatch(threads);
    final Object forever = new Object();
    for (int t = 0; t < threads; t++) {
      final int which = t;
      Thread worker = new Thread(() -> {
        long sink = 0;
        final long until = System.nanoTime() + ms * 1000000L;
        while (System.nanoTime() < until) sink += spin(which, 100000);
        if (sink == 42) System.out.println(sink);
        done.countDown();
        synchronized (forever) {
          try {
            forever.wait();
          } catch (InterruptedException e) {
            // exits with the process
          }
        }
      }, "jitsymWorker-" + t);
      worker.setDaemon(true);
      worker.start();
    }
    done.await();
    System.out.println("ready " + ProcessHandle.current().pid());
    System.out.flush();
    while (System.in.read() >= 0) {
    }
  }
}
