// jit_mapper: a JIT process run from a FUSE mount (so its executable lies there). It writes
// jit-<pid>.dump into the directory the mount serves (a header, and with NAME a code load
// record of 0x40 bytes at ADDR), maps it from the mount PROT_EXEC as every jitdump writer maps
// its file for perf (the marker the daemon's discovery looks for in /proc/PID/maps), prints its
// pid and the address of a function of its own, and sleeps until killed.
//
//   jit_mapper BACKING_DIR MOUNT_DIR [NAME ADDR]
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 3 && argc != 5) {
    fprintf(stderr, "usage: %s BACKING_DIR MOUNT_DIR [NAME ADDR]\n", argv[0]);
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof(path), "%s/jit-%d.dump", argv[1], (int)getpid());
  // A jitdump header (perf's jitdump-specification.txt): magic, version, size, machine, pad,
  // pid, timestamp, flags.
  unsigned char header[40] = {0};
  const uint32_t words[6] = {0x4A695444, 1, 40, 62, 0, (uint32_t)getpid()};
  memcpy(header, words, sizeof(words));
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  const uint64_t ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
  memcpy(header + 24, &ns, 8);
  const int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0 || write(out, header, sizeof(header)) != (ssize_t)sizeof(header)) {
    perror(path);
    return 1;
  }
  if (argc == 5) {
    // LOAD: id, total size, timestamp; pid, tid, vma, code address, code size, code index;
    // the name with its NUL; the code bytes.
    unsigned char record[4096] = {0};
    const size_t name_len = strlen(argv[3]) + 1;
    const uint64_t addr = strtoull(argv[4], NULL, 0), code_size = 0x40, index = 1;
    const uint32_t total = (uint32_t)(16 + 8 + 32 + name_len + code_size);
    if (total > sizeof(record)) return 2;
    const uint32_t id = 0, pid = (uint32_t)getpid();
    memcpy(record, &id, 4);
    memcpy(record + 4, &total, 4);
    memcpy(record + 8, &ns, 8);
    memcpy(record + 16, &pid, 4);
    memcpy(record + 20, &pid, 4);
    memcpy(record + 24, &addr, 8);
    memcpy(record + 32, &addr, 8);
    memcpy(record + 40, &code_size, 8);
    memcpy(record + 48, &index, 8);
    memcpy(record + 56, argv[3], name_len);
    if (write(out, record, total) != (ssize_t)total) {
      perror(path);
      return 1;
    }
  }
  close(out);
  snprintf(path, sizeof(path), "%s/jit-%d.dump", argv[2], (int)getpid());
  const int fd = open(path, O_RDONLY);
  if (fd < 0) {
    perror(path);
    return 1;
  }
  if (mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  printf("%d 0x%llx\n", (int)getpid(), (unsigned long long)(uintptr_t)&main);
  fflush(stdout);
  for (;;) pause();
}
