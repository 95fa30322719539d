#ifndef PGPUSH_CSHIMS_H
#define PGPUSH_CSHIMS_H
#include <stddef.h>
#include <stdint.h>

// Linux extras hidden by Swift's Glibc module.
int cshims_eventfd(unsigned int initval, int nonblocking);
int cshims_accept4_nonblocking(int fd);
int cshims_set_thread_name(const char *name);
void cshims_line_buffer_stdout(void);

// OpenSSL's error queue as one line of text (ERR_print_errors_cb is callback-based and
// BIO_printf variadic). Returns the number of bytes written, without the terminator.
size_t cshims_openssl_error_string(char *buffer, size_t length);
#endif
