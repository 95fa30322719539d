#define _GNU_SOURCE
#include "cshims.h"
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <openssl/bio.h>
#include <openssl/err.h>

int cshims_eventfd(unsigned int initval, int nonblocking) {
    return eventfd(initval, EFD_CLOEXEC | (nonblocking ? EFD_NONBLOCK : 0));
}

int cshims_accept4_nonblocking(int fd) {
    return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int cshims_set_thread_name(const char *name) {
    char shortName[16];
    strncpy(shortName, name, sizeof shortName - 1);
    shortName[sizeof shortName - 1] = 0;
    return pthread_setname_np(pthread_self(), shortName);
}

int cshims_spawn_actions_add_chdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

int cshims_spawn_actions_add_closefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

void cshims_line_buffer_stdout(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
}

size_t cshims_openssl_error_string(char *buffer, size_t length) {
    if (length == 0) return 0;
    size_t used = 0;
    buffer[0] = 0;
    unsigned long code;
    while ((code = ERR_get_error()) != 0) {
        char line[256];
        ERR_error_string_n(code, line, sizeof line);
        size_t n = strlen(line);
        if (used > 0 && used + 2 < length) { buffer[used++] = ';'; buffer[used++] = ' '; }
        if (used + n >= length) n = length - used - 1;
        memcpy(buffer + used, line, n);
        used += n;
        buffer[used] = 0;
    }
    return used;
}

int cshims_enable_receive_timestamps(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
}

// The read half of a socket BIO, through recvmsg so that the kernel's receive time of the
// bytes comes along. End of file and retry flags behave as OpenSSL's own socket BIO.
static int timed_socket_read(BIO *bio, char *buffer, int length) {
    cshims_timed_socket *socket = BIO_get_data(bio);
    char control[CMSG_SPACE(sizeof(struct timespec))];
    struct iovec vector = { .iov_base = buffer, .iov_len = (size_t)length };
    struct msghdr message = { .msg_iov = &vector, .msg_iovlen = 1, .msg_control = control,
                              .msg_controllen = sizeof control };
    BIO_clear_retry_flags(bio);
    ssize_t count = recvmsg(socket->fd, &message, 0);
    if (count < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) BIO_set_retry_read(bio);
        return -1;
    }
    if (count == 0) BIO_set_flags(bio, BIO_FLAGS_IN_EOF);
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec stamp;
            memcpy(&stamp, CMSG_DATA(header), sizeof stamp);
            socket->last_arrival_ns = (int64_t)stamp.tv_sec * 1000000000 + stamp.tv_nsec;
        }
    }
    return (int)count;
}

static long timed_socket_ctrl(BIO *bio, int command, long number, void *pointer) {
    (void)number;
    (void)pointer;
    switch (command) {
    case BIO_CTRL_FLUSH: return 1;
    case BIO_CTRL_EOF: return BIO_test_flags(bio, BIO_FLAGS_IN_EOF) != 0;
    default: return 0;
    }
}

static int timed_socket_create(BIO *bio) {
    BIO_set_init(bio, 1);
    return 1;
}

// Made once and never freed: one small allocation for the process's lifetime.
static BIO_METHOD *timed_socket_method;
static pthread_once_t timed_socket_method_once = PTHREAD_ONCE_INIT;

static void make_timed_socket_method(void) {
    BIO_METHOD *method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "pgpush timed socket");
    if (method == NULL) return;
    BIO_meth_set_read(method, timed_socket_read);
    BIO_meth_set_ctrl(method, timed_socket_ctrl);
    BIO_meth_set_create(method, timed_socket_create);
    timed_socket_method = method;
}

BIO *cshims_timed_socket_read_bio(cshims_timed_socket *socket) {
    pthread_once(&timed_socket_method_once, make_timed_socket_method);
    if (timed_socket_method == NULL) return NULL;
    BIO *bio = BIO_new(timed_socket_method);
    if (bio != NULL) BIO_set_data(bio, socket);
    return bio;
}
