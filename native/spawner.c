/*
 * svc-spawner: starts the daemon's agents with posix_spawn, which glibc implements with
 * clone(CLONE_VM | CLONE_VFORK): the child shares the helper's memory until it calls exec, so no
 * page table is copied. Node's spawn forks (libuv has no posix_spawn path on Linux), and on virtual
 * machines whose page-table copies are slow that costs several milliseconds per agent even from a
 * small Node process (docs/benchmarks.md).
 *
 * It speaks the same messages as the daemon's Node helper (src/daemon/runner/spawner.ts), framed in
 * binary over its stdin and stdout. Every integer is a little-endian 32-bit value.
 *
 *   request  (stdin):  len, id, argc, envc, then argc + 1 + envc NUL-terminated strings:
 *                      the command and its arguments, the working folder, the environment (K=V)
 *   message  (stdout): len, id, kind (one byte), payload
 *                      kind 1: the agent runs; payload: its pid
 *                      kind 2: it could not start; payload: the errno
 *                      kind 3, 4: output on stdout, stderr; payload: the bytes
 *                      kind 5: it ended and its output was read to the end; payload: the exit
 *                              code (-1 after a signal) and the signal number (0 without one)
 *                      kind 6: the helper runs (its first message, id 0, no payload)
 *
 * `len` counts the bytes that follow it. Each agent gets /dev/null as its stdin, a session (and so a
 * process group) of its own, the default action for every signal and an empty signal mask. A command
 * without a slash is looked up in the PATH of the agent's own environment, as Node does.
 *
 * glibc leaves its own two real-time signals (32 and 33) ignored in the child; every glibc program
 * sets its handlers for them as it starts.
 *
 * The helper exits when its stdin ends (the daemon stopped or died); its agents run on in their own
 * sessions, as with the Node helper.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_REQUEST (64u << 20)
#define READ_CHUNK 65536

enum { KIND_PID = 1, KIND_ERROR = 2, KIND_STDOUT = 3, KIND_STDERR = 4, KIND_EXIT = 5, KIND_READY = 6 };

struct agent {
  uint32_t id;
  pid_t pid;
  int out; /* read ends of its stdout and stderr, -1 once they ended */
  int err;
  int exited;
  int status;
  struct agent *next;
};

static struct agent *agents;
static int wake[2]; /* SIGCHLD writes a byte here */

static void put32(unsigned char *p, uint32_t v) {
  p[0] = v & 0xff;
  p[1] = (v >> 8) & 0xff;
  p[2] = (v >> 16) & 0xff;
  p[3] = (v >> 24) & 0xff;
}

static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Writes all of it to the daemon; a daemon that is gone ends the helper. */
static void write_all(const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(1, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      _exit(0);
    }
    p += w;
    n -= (size_t)w;
  }
}

static void send_message(uint32_t id, int kind, const void *payload, size_t n) {
  unsigned char head[9];
  put32(head, (uint32_t)(5 + n));
  put32(head + 4, id);
  head[8] = (unsigned char)kind;
  write_all(head, sizeof head);
  if (n > 0) write_all(payload, n);
}

static void send_int(uint32_t id, int kind, int32_t v) {
  unsigned char p[4];
  put32(p, (uint32_t)v);
  send_message(id, kind, p, 4);
}

static void on_child(int sig) {
  (void)sig;
  int saved = errno;
  ssize_t ignored = write(wake[1], "c", 1);
  (void)ignored;
  errno = saved;
}

static int cloexec_pipe(int fds[2]) {
  if (pipe(fds) != 0) return -1;
  for (int i = 0; i < 2; i++) fcntl(fds[i], F_SETFD, FD_CLOEXEC);
  return 0;
}

/* The value of PATH in an environment, or the default search path. */
static const char *path_of(char **env) {
  for (char **e = env; *e; e++)
    if (strncmp(*e, "PATH=", 5) == 0) return *e + 5;
  return "/usr/bin:/bin";
}

/*
 * The file to run for `cmd`: itself when it holds a slash (relative ones resolve in the agent's
 * folder, which it enters first), else the first executable match in PATH. 0, or the errno.
 */
static int resolve(const char *cmd, const char *cwd, char **env, char **file) {
  if (strchr(cmd, '/')) {
    *file = strdup(cmd);
    return *file ? 0 : ENOMEM;
  }
  int found = ENOENT;
  const char *p = path_of(env);
  for (;;) {
    const char *end = strchr(p, ':');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    /* An empty entry is the working folder; a relative one is relative to it. */
    int relative = n == 0 || p[0] != '/';
    size_t size = (relative ? strlen(cwd) + 1 : 0) + n + 1 + strlen(cmd) + 1;
    char *candidate = malloc(size);
    if (!candidate) return ENOMEM;
    candidate[0] = 0;
    if (relative) {
      strcat(candidate, cwd);
      strcat(candidate, "/");
    }
    strncat(candidate, p, n);
    strcat(candidate, "/");
    strcat(candidate, cmd);
    struct stat st;
    if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode)) {
      if (access(candidate, X_OK) == 0) {
        *file = candidate;
        return 0;
      }
      found = EACCES;
    }
    free(candidate);
    if (!end) return found;
    p = end + 1;
  }
}

static void start(uint32_t id, char **argv, const char *cwd, char **env) {
  char *file = NULL;
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  int rc = resolve(argv[0], cwd, env, &file);
  if (rc == 0 && (cloexec_pipe(out) != 0 || cloexec_pipe(err) != 0)) rc = errno;
  pid_t pid = -1;
  if (rc == 0) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    posix_spawn_file_actions_addchdir_np(&fa, cwd);
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigfillset(&defaults);
    sigdelset(&defaults, SIGKILL);
    sigdelset(&defaults, SIGSTOP);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
#ifdef POSIX_SPAWN_SETSID
    flags |= POSIX_SPAWN_SETSID;
#else
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
#endif
    posix_spawnattr_setflags(&attr, flags);
    rc = posix_spawn(&pid, file, &fa, &attr, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
  }
  free(file);
  if (out[1] >= 0) close(out[1]);
  if (err[1] >= 0) close(err[1]);
  if (rc != 0) {
    if (out[0] >= 0) close(out[0]);
    if (err[0] >= 0) close(err[0]);
    send_int(id, KIND_ERROR, rc);
    return;
  }
  struct agent *a = calloc(1, sizeof *a);
  if (!a) abort();
  a->id = id;
  a->pid = pid;
  a->out = out[0];
  a->err = err[0];
  a->next = agents;
  agents = a;
  send_int(id, KIND_PID, pid);
}

/* Parses one request (its bytes after `len`) and starts its agent. */
static void handle(unsigned char *req, uint32_t len) {
  if (len < 12) _exit(2);
  uint32_t id = get32(req), argc = get32(req + 4), envc = get32(req + 8);
  if (argc == 0 || argc > len || envc > len) _exit(2);
  char **argv = calloc(argc + 1, sizeof *argv);
  char **env = calloc(envc + 1, sizeof *env);
  if (!argv || !env) abort();
  char *p = (char *)req + 12, *end = (char *)req + len;
  char *cwd = NULL;
  for (uint32_t i = 0; i < argc + 1 + envc; i++) {
    char *nul = memchr(p, 0, (size_t)(end - p));
    if (!nul) _exit(2);
    if (i < argc) argv[i] = p;
    else if (i == argc) cwd = p;
    else env[i - argc - 1] = p;
    p = nul + 1;
  }
  start(id, argv, cwd, env);
  free(argv);
  free(env);
}

/* Records the exits SIGCHLD announced. */
static void reap(void) {
  char drain[64];
  while (read(wake[0], drain, sizeof drain) > 0) {
  }
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    for (struct agent *a = agents; a; a = a->next) {
      if (a->pid == pid) {
        a->exited = 1;
        a->status = status;
        break;
      }
    }
  }
}

/* Sends the end of every agent that exited and whose output ended, and forgets it. */
static void settle(void) {
  for (struct agent **link = &agents; *link;) {
    struct agent *a = *link;
    if (!a->exited || a->out >= 0 || a->err >= 0) {
      link = &a->next;
      continue;
    }
    unsigned char p[8];
    int signaled = WIFSIGNALED(a->status);
    put32(p, (uint32_t)(signaled ? -1 : WEXITSTATUS(a->status)));
    put32(p + 4, (uint32_t)(signaled ? WTERMSIG(a->status) : 0));
    send_message(a->id, KIND_EXIT, p, 8);
    *link = a->next;
    free(a);
  }
}

/* Forwards what is readable on one of an agent's pipes; closes it at its end. */
static void forward(struct agent *a, int *fd, int kind) {
  static unsigned char buf[READ_CHUNK];
  ssize_t n = read(*fd, buf, sizeof buf);
  if (n > 0) {
    send_message(a->id, kind, buf, (size_t)n);
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    close(*fd);
    *fd = -1;
  }
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  if (cloexec_pipe(wake) != 0) return 1;
  fcntl(wake[0], F_SETFL, O_NONBLOCK);
  fcntl(wake[1], F_SETFL, O_NONBLOCK);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_child;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL);
  send_message(0, KIND_READY, NULL, 0);

  unsigned char *in = NULL;
  size_t have = 0, cap = 0;
  int input_open = 1;
  struct pollfd *fds = NULL;
  struct agent **owners = NULL;
  size_t fds_cap = 0;
  while (input_open) {
    size_t count = 2;
    for (struct agent *a = agents; a; a = a->next) count += 2;
    if (count > fds_cap) {
      fds_cap = count * 2;
      fds = realloc(fds, fds_cap * sizeof *fds);
      owners = realloc(owners, fds_cap * sizeof *owners);
      if (!fds || !owners) abort();
    }
    size_t n = 0;
    fds[n++] = (struct pollfd){.fd = 0, .events = POLLIN};
    fds[n++] = (struct pollfd){.fd = wake[0], .events = POLLIN};
    for (struct agent *a = agents; a; a = a->next) {
      if (a->out >= 0) owners[n] = a, fds[n++] = (struct pollfd){.fd = a->out, .events = POLLIN};
      if (a->err >= 0) owners[n] = a, fds[n++] = (struct pollfd){.fd = a->err, .events = POLLIN};
    }
    if (poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    for (size_t i = 2; i < n; i++) {
      if (!fds[i].revents) continue;
      struct agent *a = owners[i];
      if (fds[i].fd == a->out) forward(a, &a->out, KIND_STDOUT);
      else if (fds[i].fd == a->err) forward(a, &a->err, KIND_STDERR);
    }
    if (fds[1].revents) reap();
    if (fds[0].revents) {
      if (cap - have < READ_CHUNK) {
        cap = have + READ_CHUNK;
        in = realloc(in, cap);
        if (!in) abort();
      }
      ssize_t r = read(0, in + have, cap - have);
      if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) input_open = 0;
      if (r > 0) have += (size_t)r;
      size_t used = 0;
      while (have - used >= 4) {
        uint32_t len = get32(in + used);
        if (len > MAX_REQUEST) return 2;
        if (have - used - 4 < len) break;
        handle(in + used + 4, len);
        used += 4 + (size_t)len;
      }
      memmove(in, in + used, have - used);
      have -= used;
    }
    settle();
  }
  return 0;
}
