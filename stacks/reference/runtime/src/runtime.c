#define _GNU_SOURCE
#include "ascend_runtime.h"

#include <acl/acl.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ARGS 64

static char last_error[1024];
static int initialized;

static int fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

static int acl_fail(aclError code, const char *call)
{
    const char *msg = aclGetRecentErrMsg();
    return fail(code, "%s failed: %s", call, msg ? msg : "(no message)");
}

const char *ascend_runtime_last_error(void) { return last_error; }

int ascend_runtime_init(int32_t device_id)
{
    if (initialized)
        return ACL_SUCCESS;
    aclError err = aclInit(NULL);
    if (err != ACL_SUCCESS && err != ACL_ERROR_REPEAT_INITIALIZE)
        return acl_fail(err, "aclInit");
    if ((err = aclrtSetDevice(device_id)) != ACL_SUCCESS)
        return acl_fail(err, "aclrtSetDevice");
    initialized = 1;
    return ACL_SUCCESS;
}

static int ensure_init(void)
{
    const char *dev = getenv("ASCEND_DEVICE_ID");
    return ascend_runtime_init(dev ? atoi(dev) : 0);
}

int ascend_malloc(void **dev_ptr, size_t size)
{
    int err = ensure_init();
    if (err)
        return err;
    return (err = aclrtMalloc(dev_ptr, size, ACL_MEM_MALLOC_HUGE_FIRST)) ? acl_fail(err, "aclrtMalloc") : 0;
}

int ascend_free(void *dev_ptr)
{
    aclError err = aclrtFree(dev_ptr);
    return err ? acl_fail(err, "aclrtFree") : 0;
}

int ascend_memcpy_to_device(void *dst, const void *src, size_t size)
{
    aclError err = aclrtMemcpy(dst, size, src, size, ACL_MEMCPY_HOST_TO_DEVICE);
    return err ? acl_fail(err, "aclrtMemcpy") : 0;
}

int ascend_memcpy_to_host(void *dst, const void *src, size_t size)
{
    aclError err = aclrtMemcpy(dst, size, src, size, ACL_MEMCPY_DEVICE_TO_HOST);
    return err ? acl_fail(err, "aclrtMemcpy") : 0;
}

/* Copy of the named ELF section of the file at path (NUL-terminated), or NULL with *err set. */
static char *read_section(const char *path, const char *name, size_t *len, int *err)
{
    char *out = NULL;
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        *err = fail(ACL_ERROR_INVALID_FILE, "cannot open kernel library %s", path);
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    unsigned char *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        *err = fail(ACL_ERROR_INVALID_FILE, "cannot map kernel library %s", path);
        return NULL;
    }
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)map;
    size_t size = (size_t)st.st_size;
    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > size || eh->e_shstrndx >= eh->e_shnum) {
        *err = fail(ACL_ERROR_INVALID_FILE, "%s is not a 64-bit ELF kernel library", path);
        goto out;
    }
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(map + eh->e_shoff);
    const char *names = (const char *)map + sh[eh->e_shstrndx].sh_offset;
    for (unsigned i = 0; i < eh->e_shnum; ++i) {
        if (strcmp(names + sh[i].sh_name, name) != 0 || sh[i].sh_offset + sh[i].sh_size > size)
            continue;
        out = malloc(sh[i].sh_size + 1);
        if (!out) {
            *err = fail(ACL_ERROR_BAD_ALLOC, "out of memory");
            goto out;
        }
        memcpy(out, map + sh[i].sh_offset, sh[i].sh_size);
        out[sh[i].sh_size] = '\0';
        *len = sh[i].sh_size;
        break;
    }
    if (!out)
        *err = fail(ACL_ERROR_INVALID_FILE, "%s has no %s section: kernel not compiled by the toolkit's ascendcc?",
                    path, name);
out:
    munmap(map, size);
    return out;
}

/* Value of key in a "key=value\n..." record, copied into buf. */
static int record_field(const char *record, const char *key, char *buf, size_t bufsize)
{
    size_t klen = strlen(key);
    for (const char *line = record; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line)) {
        if (strncmp(line, key, klen) == 0 && line[klen] == '=') {
            const char *value = line + klen + 1;
            size_t n = strcspn(value, "\n");
            if (n >= bufsize)
                return 0;
            memcpy(buf, value, n);
            buf[n] = '\0';
            return 1;
        }
    }
    return 0;
}

typedef union {
    void *ptr;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f32;
} arg_storage;

static int store_arg(const ascend_kernel_arg *arg, arg_storage *slot)
{
    const char *t = arg->type;
    if (strchr(t, '*'))
        slot->ptr = arg->value.ptr;
    else if (!strcmp(t, "int32"))
        slot->i32 = (int32_t)arg->value.i;
    else if (!strcmp(t, "uint32"))
        slot->u32 = (uint32_t)arg->value.i;
    else if (!strcmp(t, "int64"))
        slot->i64 = arg->value.i;
    else if (!strcmp(t, "uint64"))
        slot->u64 = (uint64_t)arg->value.i;
    else if (!strcmp(t, "float32"))
        slot->f32 = (float)arg->value.f;
    else
        return 0;
    return 1;
}

int launch_kernel(const char *path, const uint32_t grid[3], const uint32_t block[3], size_t shared_mem,
                  const ascend_kernel_arg *args, size_t nargs)
{
    int err = ensure_init();
    if (err)
        return err;
    if (!path || !grid || !block || (nargs && !args))
        return fail(ACL_ERROR_INVALID_PARAM, "launch_kernel: NULL path, grid, block or args");
    size_t len = 0;
    char *info = read_section(path, "__kernel_info", &len, &err);
    if (!info)
        return err;
    char name[128], sig[1024], entry_name[160];
    /* Records are NUL-separated; alignment may pad with NULs, so take the first non-empty one. */
    const char *record = info;
    while (record < info + len && !*record)
        ++record;
    if (record >= info + len || !record_field(record, "name", name, sizeof name) ||
        !record_field(record, "args", sig, sizeof sig) || !record_field(record, "entry", entry_name, sizeof entry_name)) {
        free(info);
        return fail(ACL_ERROR_INVALID_FILE,
                    "%s: empty or malformed __kernel_info section: kernel not compiled by the toolkit's ascendcc?", path);
    }
    free(info);

    const char *types[MAX_ARGS];
    size_t expected = 0;
    char sig_copy[sizeof sig];
    memcpy(sig_copy, sig, sizeof sig);
    for (char *save = NULL, *tok = strtok_r(sig_copy, ",", &save); tok && expected < MAX_ARGS;
         tok = strtok_r(NULL, ",", &save))
        types[expected++] = tok;
    if (nargs != expected)
        return fail(ACL_ERROR_INVALID_PARAM, "kernel %s expects %zu arguments (%s), got %zu", name, expected, sig,
                    nargs);
    arg_storage storage[MAX_ARGS];
    void *argv[MAX_ARGS];
    for (size_t i = 0; i < nargs; ++i) {
        if (!args[i].type || strcmp(args[i].type, types[i]) != 0)
            return fail(ACL_ERROR_INVALID_PARAM, "kernel %s argument %zu is %s, got %s", name, i, types[i],
                        args[i].type ? args[i].type : "(null)");
        if (!store_arg(&args[i], &storage[i]))
            return fail(ACL_ERROR_INVALID_PARAM, "kernel %s argument %zu: unsupported type %s", name, i, types[i]);
        argv[i] = &storage[i];
    }

    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return fail(ACL_ERROR_INVALID_FILE, "cannot load %s: %s", path, dlerror());
    aclrtKernelEntry entry = (aclrtKernelEntry)dlsym(lib, entry_name);
    if (!entry) {
        dlclose(lib);
        return fail(ACL_ERROR_INVALID_FILE, "%s: kernel %s has no entry point %s", path, name, entry_name);
    }
    aclrtDim3 g = {grid[0], grid[1], grid[2]}, b = {block[0], block[1], block[2]};
    aclError aerr = aclrtLaunchKernel(entry, g, b, shared_mem, argv, NULL);
    if (aerr == ACL_SUCCESS)
        aerr = aclrtSynchronizeStream(NULL);
    dlclose(lib);
    if (aerr != ACL_SUCCESS)
        return acl_fail(aerr, "aclrtLaunchKernel");
    last_error[0] = '\0';
    return ACL_SUCCESS;
}
