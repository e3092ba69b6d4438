// A Mono workload for the mlpd integration test: prints "ready" once its hot method has been
// compiled and run, then keeps it hot until stdin reaches end of file.
using System;
using System.Threading;

public static class JitsymMlpdProbe {
  static volatile bool stop;

  static long HotLoopForJitsym(long n) {
    long acc = 0;
    for (long i = 0; i < n; i++) acc = acc * 31 + (i ^ (acc >> 7));
    return acc;
  }

  public static int Main(string[] args) {
    var reader = new Thread(() => { Console.In.ReadToEnd(); stop = true; });
    reader.IsBackground = true;
    reader.Start();
    long total = HotLoopForJitsym(1000);
    Console.Out.WriteLine("ready");
    Console.Out.Flush();
    while (!stop) total += HotLoopForJitsym(200000);
    Console.Out.WriteLine(total);
    return 0;
  }
}
