#define _GNU_SOURCE
#include "cshims.h"
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
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
