#ifndef PGPUSH_CSHIMS_H
#define PGPUSH_CSHIMS_H
#include <spawn.h>
#include <stddef.h>
#include <stdint.h>

// Linux extras hidden by Swift's Glibc module.
int cshims_eventfd(unsigned int initval, int nonblocking);
int cshims_accept4_nonblocking(int fd);
int cshims_set_thread_name(const char *name);
void cshims_line_buffer_stdout(void);
// posix_spawn_file_actions_addchdir_np, which Swift's Glibc module leaves out.
int cshims_spawn_actions_add_chdir(posix_spawn_file_actions_t *actions, const char *path);
// posix_spawn_file_actions_addclosefrom_np (glibc 2.34): the child closes every descriptor from `from` on.
int cshims_spawn_actions_add_closefrom(posix_spawn_file_actions_t *actions, int from);

// OpenSSL's error queue as one line of text (ERR_print_errors_cb is callback-based and
// BIO_printf variadic). Returns the number of bytes written, without the terminator.
size_t cshims_openssl_error_string(char *buffer, size_t length);

// A TCP socket whose reads also report when the kernel received the bytes (SO_TIMESTAMPNS,
// CLOCK_REALTIME): the moment a request reached the host, however long the reading thread
// took to get to it. `last_arrival_ns` is 0 until the kernel has given a time.
typedef struct cshims_timed_socket {
    int fd;
    int64_t last_arrival_ns;
} cshims_timed_socket;

// Asks the kernel for receive times on `fd`; 0 on success.
int cshims_enable_receive_timestamps(int fd);

// An OpenSSL read BIO over `socket->fd` that updates `socket->last_arrival_ns` on every
// read. The caller keeps `socket` alive until the BIO is freed (SSL_free frees it).
// Returns NULL when OpenSSL cannot allocate.
struct bio_st *cshims_timed_socket_read_bio(cshims_timed_socket *socket);
#endif
