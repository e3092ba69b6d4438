// silent_to_root: a FUSE filesystem (libfuse3, low-level API) that serves the regular files of
// one directory, read only, to every user but root, and never answers a request made by uid 0:
// it reads the request and drops it, as a server written to stall a privileged reader would.
// The kernel then waits for the answer uninterruptibly (the request is with the server), so a
// thread of jitsymd that asked would never return, nor let the daemon exit.
//
//   silent_to_root BACKING_DIR MOUNTPOINT [--answer-root]
//
// mounts with allow_other and prints "mounted"; with --answer-root it answers root too (an
// ordinary server, whose files the daemon must still follow).
//
// Every lookup and attribute is asked again each time (timeouts 0): nothing the kernel cached
// for its owner answers root instead.
#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILES 256
static int backing = -1;
static char names[MAX_FILES][256];
static int nnames = 0;

static int answer_root = 0;  // --answer-root: an ordinary FUSE server, for comparison

static int ignored(fuse_req_t req) {
  const struct fuse_ctx* c = fuse_req_ctx(req);
  if (c->uid == 0 && !answer_root) {
    fprintf(stderr, "silent_to_root: not answering a request of uid 0 (pid %d)\n", (int)c->pid);
    return 1;
  }
  return 0;
}

static fuse_ino_t ino_of(const char* name) {
  for (int i = 0; i < nnames; ++i)
    if (strcmp(names[i], name) == 0) return (fuse_ino_t)(i + 2);
  if (nnames == MAX_FILES || strlen(name) >= 256) return 0;
  strcpy(names[nnames], name);
  return (fuse_ino_t)(++nnames + 1);
}

static const char* name_of(fuse_ino_t ino) {
  if (ino < 2 || ino - 2 >= (fuse_ino_t)nnames) return NULL;
  return names[ino - 2];
}

static int attr_of(fuse_ino_t ino, struct stat* st) {
  if (ino == FUSE_ROOT_ID) {
    if (fstat(backing, st) != 0) return errno;
  } else {
    const char* n = name_of(ino);
    if (!n) return ENOENT;
    if (fstatat(backing, n, st, AT_SYMLINK_NOFOLLOW) != 0) return errno;
    if (!S_ISREG(st->st_mode)) return ENOENT;
  }
  st->st_ino = ino;
  return 0;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  if (ignored(req)) return;
  struct fuse_entry_param e;
  memset(&e, 0, sizeof(e));
  if (parent != FUSE_ROOT_ID) { fuse_reply_err(req, ENOENT); return; }
  fuse_ino_t ino = ino_of(name);
  int err = ino ? attr_of(ino, &e.attr) : ENAMETOOLONG;
  if (err) { fuse_reply_err(req, err); return; }
  e.ino = ino;
  fuse_reply_entry(req, &e);  // timeouts 0: every access asks again
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  (void)fi;
  if (ignored(req)) return;
  struct stat st;
  int err = attr_of(ino, &st);
  if (err) fuse_reply_err(req, err);
  else fuse_reply_attr(req, &st, 0.0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  if (ignored(req)) return;
  const char* n = name_of(ino);
  if (!n) { fuse_reply_err(req, ENOENT); return; }
  int fd = openat(backing, n, O_RDONLY | O_NOFOLLOW);
  if (fd < 0) { fuse_reply_err(req, errno); return; }
  fi->fh = (uint64_t)fd;
  fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info* fi) {
  (void)ino;
  if (ignored(req)) return;
  char* buf = malloc(size ? size : 1);
  ssize_t n = pread((int)fi->fh, buf, size, off);
  if (n < 0) fuse_reply_err(req, errno);
  else fuse_reply_buf(req, buf, (size_t)n);
  free(buf);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  (void)ino;
  close((int)fi->fh);  // whoever closes: the kernel sends RELEASE without waiting
  fuse_reply_err(req, 0);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  (void)ino; (void)fi;
  if (ignored(req)) return;
  fuse_reply_err(req, 0);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info* fi) {
  (void)fi;
  if (ignored(req)) return;
  if (ino != FUSE_ROOT_ID) { fuse_reply_err(req, ENOTDIR); return; }
  char* buf = calloc(1, size);
  size_t used = 0;
  int dfd = openat(backing, ".", O_RDONLY | O_DIRECTORY);
  DIR* d = fdopendir(dfd);
  off_t i = 0;
  struct dirent* e;
  while (d && (e = readdir(d)) != NULL) {
    if (i++ < off) continue;
    struct stat st;
    memset(&st, 0, sizeof(st));
    st.st_ino = 1;
    st.st_mode = e->d_type << 12;
    size_t want = fuse_add_direntry(req, buf + used, size - used, e->d_name, &st, i);
    if (want > size - used) break;
    used += want;
  }
  if (d) closedir(d);
  fuse_reply_buf(req, buf, used);
  free(buf);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino) {
  (void)ino;
  if (ignored(req)) return;
  struct statvfs s;
  memset(&s, 0, sizeof(s));
  s.f_namemax = 255;
  s.f_bsize = 4096;
  fuse_reply_statfs(req, &s);
}

static const struct fuse_lowlevel_ops ops = {
    .lookup = op_lookup,
    .getattr = op_getattr,
    .open = op_open,
    .read = op_read,
    .release = op_release,
    .flush = op_flush,
    .readdir = op_readdir,
    .statfs = op_statfs,
};

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[3], "--answer-root") == 0) {
    answer_root = 1;
    --argc;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: %s BACKING_DIR MOUNTPOINT [--answer-root]\n", argv[0]);
    return 2;
  }
  backing = open(argv[1], O_RDONLY | O_DIRECTORY);
  if (backing < 0) { perror(argv[1]); return 1; }
  char* fargv[] = {argv[0], "-o", "allow_other,fsname=silent_to_root,subtype=silent_to_root", NULL};
  struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
  struct fuse_session* se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
  if (!se) return 1;
  if (fuse_session_mount(se, argv[2]) != 0) return 1;
  printf("mounted\n");
  fflush(stdout);
  int rc = fuse_session_loop(se);
  fuse_session_unmount(se);
  fuse_session_destroy(se);
  return rc ? 1 : 0;
}
