/*
 * A fake libcuda.so.1 on host memory, for bench/cuda_python_abi.py: it lets the
 * REAL cuda-python bindings (cuda.bindings.driver, 13.x) load and call a driver
 * where there is no GPU, so that the argument types teeny_ir's cuda backend
 * passes go through the bindings' own conversions down to a C ABI.
 *
 * How cuda-bindings 13 reaches the driver (cuda/bindings/_internal/driver_linux.pyx):
 * cuda.pathfinder.load_nvidia_dynamic_lib("cuda") dlopen()s "libcuda.so.1" by
 * soname (system search only: LD_LIBRARY_PATH, ld.so.cache, ...; or a library
 * of that soname already loaded), the bindings dlsym() "cuGetProcAddress_v2"
 * and then ask it for every entry point by its base name and the CUDA version
 * that introduced the ABI they were compiled for ("cuMemAlloc", 3020 ->
 * cuMemAlloc_v2; with CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1 the flags are
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM and the stream-ordered calls ask
 * for 7000), all ~520 of them when the first driver call initializes the module.
 * LD_DEBUG=bindings shows no other dlsym() into this library (the 12.x sources
 * also have a get_cuda_version() probe that dlsym()s "cuDriverGetVersion"). So
 * what matters is cuGetProcAddress_v2's table below; the entry points are
 * exported under the real driver's names too (cuMemAlloc_v2, cuMemFree_v2,
 * cuMemcpyHtoD_v2, ...).
 *
 * Device memory is malloc'd host memory (a CUdeviceptr is the host address);
 * copies are memcpy; memsets run at once; a launch computes nothing and logs
 * the function, grid, block, shared bytes, stream and each kernelParams entry.
 * Every call that changes or reads fake state validates its handles and ranges
 * and returns an error code instead of touching memory it does not own.
 *
 * CUDA graphs by stream capture: between cuStreamBeginCapture and
 * cuStreamEndCapture a launch or memset on the capturing stream becomes a node
 * of the stream's graph (a launch's kernelParams entries copied at the call, as
 * the driver does) and is logged with "captured": the graph's id, not run. A
 * call the driver refuses during a capture invalidates it and returns its
 * error: the synchronous copies (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: they
 * would wait for the capturing stream), cuStreamSynchronize of that stream, and
 * outside the relaxed mode cuMemAlloc, cuMemFree and cuModuleLoadData
 * (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED); cuStreamEndCapture then returns
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and no graph. cuGraphInstantiate
 * (cuGraphInstantiateWithFlags) copies the nodes into an executable graph,
 * cuGraphLaunch replays them in order, logging each kernel node as a
 * "graph kernel node" record in the launch's format and doing each memset.
 *
 * A name
 * cuGetProcAddress does not know gets a stub that logs the name and returns
 * CUDA_ERROR_NOT_SUPPORTED: nothing unimplemented can crash.
 *
 * Environment:
 *   FAKE_CUDA_LOG         file that gets one JSON object per line for every call
 *   FAKE_CUDA_ARITY       file of "kernel_name param_count" lines: how many
 *                         kernelParams entries a launch of that kernel reads
 *                         (the real driver knows it from the cubin)
 *   FAKE_CUDA_PARAM_BYTES bytes logged per kernelParams entry (default 8, the
 *                         widest parameter teeny_ir passes; more reads past an entry)
 *   FAKE_CUDA_CC          compute capability "major.minor" (default 9.0)
 *
 * Build: gcc -shared -fPIC -O1 -Wall -Wl,-soname,libcuda.so.1 -o libcuda.so.1 fake_libcuda.c
 */

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUgraph;
typedef void *CUgraphExec;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_ILLEGAL_STATE = 401,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906,
};

#define CAPTURE_MODE_RELAXED 2 /* CU_STREAM_CAPTURE_MODE_RELAXED; 0 global, 1 thread-local */
#define MAX_PARAMS 64
#define MAX_PARAM_BYTES 64

#define FAKE_DRIVER_VERSION 13040 /* what cuda-bindings 13.4 was built for */
#define ATTR_MAX_THREADS_PER_BLOCK 1
#define ATTR_WARP_SIZE 10
#define ATTR_MULTIPROCESSOR_COUNT 16
#define ATTR_CC_MAJOR 75
#define ATTR_CC_MINOR 76
#define ATTR_MAX_SHARED_PER_BLOCK_OPTIN 97

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_file;
static int initialized;

/* --- the log ------------------------------------------------------------------- */

static void log_open(void) {
    if (log_file == NULL) {
        const char *path = getenv("FAKE_CUDA_LOG");
        if (path != NULL && *path) {
            log_file = fopen(path, "a");
        }
    }
}

/* One JSON line: {"call": name, <fields>}; fields is a printf format of ", k: v" items. */
static void log_call(const char *name, const char *fields, ...) {
    log_open();
    if (log_file == NULL) {
        return;
    }
    fprintf(log_file, "{\"call\": \"%s\"", name);
    if (fields != NULL) {
        va_list args;
        va_start(args, fields);
        vfprintf(log_file, fields, args);
        va_end(args);
    }
    fputs("}\n", log_file);
    fflush(log_file);
}

static void log_hex(const unsigned char *bytes, size_t n) {
    for (size_t i = 0; i < n; i++) {
        fprintf(log_file, "%02x", bytes[i]);
    }
}

/* --- allocations --------------------------------------------------------------- */

typedef struct {
    unsigned char *base;
    size_t size;
} Allocation;

static Allocation *allocations;
static size_t allocation_count, allocation_capacity;

static int allocation_index(CUdeviceptr base) {
    for (size_t i = 0; i < allocation_count; i++) {
        if ((CUdeviceptr)(uintptr_t)allocations[i].base == base) {
            return (int)i;
        }
    }
    return -1;
}

/* Is [address, address + n) inside one live allocation? */
static int in_allocation(CUdeviceptr address, size_t n) {
    for (size_t i = 0; i < allocation_count; i++) {
        CUdeviceptr base = (CUdeviceptr)(uintptr_t)allocations[i].base;
        if (address >= base && n <= allocations[i].size && address - base <= allocations[i].size - n) {
            return 1;
        }
    }
    return 0;
}

/* --- handles ------------------------------------------------------------------- */

#define MAGIC_MODULE 0x4d4f44554c45ULL
#define MAGIC_FUNCTION 0x46554e4354ULL
#define MAGIC_STREAM 0x53545245414dULL
#define MAGIC_GRAPH 0x4752415048ULL
#define MAGIC_GRAPH_EXEC 0x4752415845ULL

typedef struct Module {
    unsigned long long magic;
    int id;
    unsigned char *image;
    size_t size;
    unsigned long long fnv;
    struct Module *next;
} Module;

typedef struct Function {
    unsigned long long magic;
    Module *module;
    char name[256];
    int max_dynamic_shared;
    struct Function *next;
} Function;

/* A graph node: a kernel launch (its kernelParams entries copied) or a memset. */
typedef struct {
    int is_kernel;
    void *function; /* a Function *, checked again when replayed */
    unsigned grid[3], block[3], shared;
    int arity, param_bytes;
    long long offsets[MAX_PARAMS];
    unsigned char params[MAX_PARAMS][MAX_PARAM_BYTES];
    CUdeviceptr dst;
    unsigned value;
    size_t count;
    int element; /* memset: 1 (D8) or 4 (D32) bytes */
} Node;

typedef struct Graph {
    unsigned long long magic;
    int id;
    Node *nodes;
    size_t count, capacity;
    struct Graph *next;
} Graph;

typedef struct GraphExec {
    unsigned long long magic;
    int id, graph;
    Node *nodes;
    size_t count;
    struct GraphExec *next;
} GraphExec;

typedef struct Stream {
    unsigned long long magic;
    int id;
    Graph *capture;      /* the graph a capture under way records into, or NULL */
    int capture_mode;
    CUresult invalidated; /* the error that invalidated that capture, or 0 */
    struct Stream *next;
} Stream;

static Module *modules;
static Function *functions;
static Stream *streams;
static Graph *graphs;
static GraphExec *graph_execs;
static int next_module_id = 1, next_stream_id = 1, next_graph_id = 1;
static int context_retains;
static char context_object[64];

static int live_module(void *handle) {
    for (Module *m = modules; m != NULL; m = m->next) {
        if ((void *)m == handle) {
            return 1;
        }
    }
    return 0;
}

static Function *live_function(void *handle) {
    for (Function *f = functions; f != NULL; f = f->next) {
        if ((void *)f == handle) {
            return f;
        }
    }
    return NULL;
}

/* NULL (the legacy default stream) or a stream this fake created. */
static int valid_stream(void *handle) {
    if (handle == NULL) {
        return 1;
    }
    for (Stream *s = streams; s != NULL; s = s->next) {
        if ((void *)s == handle) {
            return 1;
        }
    }
    return 0;
}

static int stream_id(void *handle) {
    return handle == NULL ? 0 : ((Stream *)handle)->id;
}

/* The capture a call is refused by (the driver's rules, see the header): the
 * error to return after invalidating it, or 0. sync_stream: the stream a
 * cuStreamSynchronize waits for (else NULL). */
static CUresult capture_refuses(int synchronous, int unsafe, void *sync_stream) {
    for (Stream *s = streams; s != NULL; s = s->next) {
        if (s->capture == NULL) {
            continue;
        }
        CUresult code = 0;
        if (synchronous) {
            code = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        } else if ((unsafe && s->capture_mode != CAPTURE_MODE_RELAXED) || (void *)s == sync_stream) {
            code = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
        if (code != 0) {
            if (s->invalidated == 0) {
                s->invalidated = code;
            }
            return code;
        }
    }
    return 0;
}

/* Append a node to the graph a stream captures into; 0 or an error code. */
static CUresult capture_node(Stream *s, const Node *node) {
    if (s->invalidated != 0) {
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    Graph *g = s->capture;
    if (g->count == g->capacity) {
        size_t capacity = g->capacity ? 2 * g->capacity : 16;
        Node *grown = realloc(g->nodes, capacity * sizeof(Node));
        if (grown == NULL) {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        g->nodes = grown;
        g->capacity = capacity;
    }
    g->nodes[g->count++] = *node;
    return CUDA_SUCCESS;
}

/* --- the entry points ---------------------------------------------------------- */

#define CHECK_INIT()                                                                               \
    do {                                                                                           \
        if (!initialized) {                                                                        \
            pthread_mutex_unlock(&lock);                                                           \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
        }                                                                                          \
    } while (0)

static CUresult fail(const char *name, CUresult code, const char *why) {
    log_call(name, ", \"error\": %d, \"why\": \"%s\"", code, why);
    pthread_mutex_unlock(&lock);
    return code;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **pstr) {
    static const struct {
        CUresult code;
        const char *name;
    } names[] = {
        {CUDA_SUCCESS, "CUDA_SUCCESS"},
        {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
        {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
        {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
        {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
        {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE"},
        {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
        {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
        {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE"},
        {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
        {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
        {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
        {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"},
        {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"},
    };
    if (pstr == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (names[i].code == error) {
            *pstr = names[i].name;
            return CUDA_SUCCESS;
        }
    }
    *pstr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **pstr) {
    return cuGetErrorName(error, pstr);
}

EXPORT CUresult cuDriverGetVersion(int *version) {
    if (version == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *version = FAKE_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuInit(unsigned int flags) {
    pthread_mutex_lock(&lock);
    log_call("cuInit", ", \"flags\": %u", flags);
    if (flags != 0) {
        return fail("cuInit", CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    }
    initialized = 1;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    if (count == NULL) {
        return fail("cuDeviceGetCount", CUDA_ERROR_INVALID_VALUE, "NULL count");
    }
    *count = 1;
    log_call("cuDeviceGetCount", ", \"count\": 1");
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    log_call("cuDeviceGet", ", \"ordinal\": %d", ordinal);
    if (device == NULL) {
        return fail("cuDeviceGet", CUDA_ERROR_INVALID_VALUE, "NULL device");
    }
    if (ordinal != 0) {
        return fail("cuDeviceGet", CUDA_ERROR_INVALID_DEVICE, "one device only");
    }
    *device = 0;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device) {
    int major = 9, minor = 0;
    const char *cc = getenv("FAKE_CUDA_CC");
    if (cc != NULL) {
        sscanf(cc, "%d.%d", &major, &minor);
    }
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    log_call("cuDeviceGetAttribute", ", \"attribute\": %d, \"device\": %d", attribute, device);
    if (value == NULL) {
        return fail("cuDeviceGetAttribute", CUDA_ERROR_INVALID_VALUE, "NULL value");
    }
    if (device != 0) {
        return fail("cuDeviceGetAttribute", CUDA_ERROR_INVALID_DEVICE, "one device only");
    }
    switch (attribute) {
    case ATTR_CC_MAJOR: *value = major; break;
    case ATTR_CC_MINOR: *value = minor; break;
    case ATTR_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case ATTR_WARP_SIZE: *value = 32; break;
    case ATTR_MULTIPROCESSOR_COUNT: *value = 132; break;
    case ATTR_MAX_SHARED_PER_BLOCK_OPTIN: *value = 232448; break;
    default: return fail("cuDeviceGetAttribute", CUDA_ERROR_INVALID_VALUE, "attribute not faked");
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    log_call("cuDevicePrimaryCtxRetain", ", \"device\": %d", device);
    if (context == NULL) {
        return fail("cuDevicePrimaryCtxRetain", CUDA_ERROR_INVALID_VALUE, "NULL context");
    }
    if (device != 0) {
        return fail("cuDevicePrimaryCtxRetain", CUDA_ERROR_INVALID_DEVICE, "one device only");
    }
    context_retains++;
    *context = (CUcontext)context_object;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    log_call("cuDevicePrimaryCtxRelease", ", \"device\": %d", device);
    if (device != 0) {
        return fail("cuDevicePrimaryCtxRelease", CUDA_ERROR_INVALID_DEVICE, "one device only");
    }
    if (context_retains == 0) {
        return fail("cuDevicePrimaryCtxRelease", CUDA_ERROR_INVALID_CONTEXT, "not retained");
    }
    context_retains--;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext context) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    log_call("cuCtxSetCurrent", ", \"context\": \"%p\"", context);
    if (context != NULL && (context != (CUcontext)context_object || context_retains == 0)) {
        return fail("cuCtxSetCurrent", CUDA_ERROR_INVALID_CONTEXT, "not the primary context");
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamCreate(CUstream *stream, unsigned int flags) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    if (stream == NULL) {
        return fail("cuStreamCreate", CUDA_ERROR_INVALID_VALUE, "NULL stream");
    }
    if (context_retains == 0) {
        return fail("cuStreamCreate", CUDA_ERROR_INVALID_CONTEXT, "no current context");
    }
    Stream *s = calloc(1, sizeof(Stream));
    if (s == NULL) {
        return fail("cuStreamCreate", CUDA_ERROR_OUT_OF_MEMORY, "calloc");
    }
    s->magic = MAGIC_STREAM;
    s->id = next_stream_id++;
    s->next = streams;
    streams = s;
    *stream = s;
    log_call("cuStreamCreate", ", \"flags\": %u, \"stream\": %d", flags, s->id);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream stream) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    for (Stream **p = &streams; *p != NULL; p = &(*p)->next) {
        if ((void *)*p == stream) {
            Stream *s = *p;
            if (s->capture != NULL) {
                return fail("cuStreamDestroy", CUDA_ERROR_ILLEGAL_STATE, "stream is capturing");
            }
            log_call("cuStreamDestroy", ", \"stream\": %d", s->id);
            *p = s->next;
            free(s);
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    }
    return fail("cuStreamDestroy", CUDA_ERROR_INVALID_HANDLE, "unknown stream");
}

EXPORT CUresult cuStreamSynchronize(CUstream stream) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    if (!valid_stream(stream)) {
        return fail("cuStreamSynchronize", CUDA_ERROR_INVALID_HANDLE, "unknown stream");
    }
    CUresult refused = capture_refuses(0, 0, stream);
    if (refused != 0) {
        return fail("cuStreamSynchronize", refused, "synchronize of a capturing stream");
    }
    log_call("cuStreamSynchronize", ", \"stream\": %d", stream_id(stream));
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* The size of an ELF64 image: the end of its section or program header table,
 * or of its last section, whichever is furthest; 0 if it is no ELF64. */
static size_t elf_size(const unsigned char *image) {
    if (memcmp(image, "\x7f" "ELF", 4) != 0 || image[4] != 2) {
        return 0;
    }
    uint64_t phoff, shoff;
    uint16_t phentsize, phnum, shentsize, shnum;
    memcpy(&phoff, image + 0x20, 8);
    memcpy(&shoff, image + 0x28, 8);
    memcpy(&phentsize, image + 0x36, 2);
    memcpy(&phnum, image + 0x38, 2);
    memcpy(&shentsize, image + 0x3a, 2);
    memcpy(&shnum, image + 0x3c, 2);
    size_t end = 64;
    if (phoff + (uint64_t)phentsize * phnum > end) {
        end = phoff + (uint64_t)phentsize * phnum;
    }
    if (shoff + (uint64_t)shentsize * shnum > end) {
        end = shoff + (uint64_t)shentsize * shnum;
    }
    for (uint16_t i = 0; i < shnum; i++) {
        const unsigned char *section = image + shoff + (uint64_t)i * shentsize;
        uint32_t type;
        uint64_t offset, size;
        memcpy(&type, section + 4, 4);
        memcpy(&offset, section + 0x18, 8);
        memcpy(&size, section + 0x20, 8);
        if (type != 8 /* SHT_NOBITS */ && offset + size > end) {
            end = offset + size;
        }
    }
    return end;
}

static unsigned long long fnv1a(const unsigned char *data, size_t n) {
    unsigned long long hash = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        hash = (hash ^ data[i]) * 0x100000001b3ULL;
    }
    return hash;
}

EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    if (module == NULL || image == NULL) {
        return fail("cuModuleLoadData", CUDA_ERROR_INVALID_VALUE, "NULL module or image");
    }
    if (context_retains == 0) {
        return fail("cuModuleLoadData", CUDA_ERROR_INVALID_CONTEXT, "no current context");
    }
    if (capture_refuses(0, 1, NULL) != 0) {
        return fail("cuModuleLoadData", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "during a capture");
    }
    size_t size = elf_size(image);
    if (size == 0) {
        return fail("cuModuleLoadData", CUDA_ERROR_INVALID_IMAGE, "not an ELF64 cubin");
    }
    Module *m = calloc(1, sizeof(Module));
    unsigned char *copy = malloc(size);
    if (m == NULL || copy == NULL) {
        free(m);
        free(copy);
        return fail("cuModuleLoadData", CUDA_ERROR_OUT_OF_MEMORY, "malloc");
    }
    memcpy(copy, image, size);
    m->magic = MAGIC_MODULE;
    m->id = next_module_id++;
    m->image = copy;
    m->size = size;
    m->fnv = fnv1a(copy, size);
    m->next = modules;
    modules = m;
    *module = m;
    log_call("cuModuleLoadData", ", \"module\": %d, \"size\": %zu, \"fnv1a64\": \"%016llx\"", m->id,
             size, m->fnv);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleUnload(CUmodule module) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    for (Module **p = &modules; *p != NULL; p = &(*p)->next) {
        if ((void *)*p == module) {
            Module *m = *p;
            log_call("cuModuleUnload", ", \"module\": %d", m->id);
            *p = m->next;
            for (Function **q = &functions; *q != NULL;) {
                if ((*q)->module == m) {
                    Function *f = *q;
                    *q = f->next;
                    free(f);
                } else {
                    q = &(*q)->next;
                }
            }
            free(m->image);
            free(m);
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    }
    return fail("cuModuleUnload", CUDA_ERROR_INVALID_HANDLE, "unknown module");
}

/* Does the image hold "name" as a whole NUL-terminated string (a symbol name)? */
static int image_has_symbol(const Module *m, const char *name) {
    size_t n = strlen(name) + 1;
    for (size_t i = 0; i + n <= m->size; i++) {
        if ((i == 0 || m->image[i - 1] == 0) && memcmp(m->image + i, name, n) == 0) {
            return 1;
        }
    }
    return 0;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    if (function == NULL || name == NULL) {
        return fail("cuModuleGetFunction", CUDA_ERROR_INVALID_VALUE, "NULL function or name");
    }
    if (!live_module(module)) {
        return fail("cuModuleGetFunction", CUDA_ERROR_INVALID_HANDLE, "unknown module");
    }
    Module *m = module;
    if (strlen(name) >= sizeof(((Function *)0)->name) || !image_has_symbol(m, name)) {
        return fail("cuModuleGetFunction", CUDA_ERROR_NOT_FOUND, "no such symbol in the cubin");
    }
    Function *f = calloc(1, sizeof(Function));
    if (f == NULL) {
        return fail("cuModuleGetFunction", CUDA_ERROR_OUT_OF_MEMORY, "calloc");
    }
    f->magic = MAGIC_FUNCTION;
    f->module = m;
    strcpy(f->name, name);
    f->next = functions;
    functions = f;
    *function = f;
    log_call("cuModuleGetFunction", ", \"module\": %d, \"name\": \"%s\"", m->id, name);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncSetAttribute(CUfunction function, int attribute, int value) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    Function *f = live_function(function);
    if (f == NULL) {
        return fail("cuFuncSetAttribute", CUDA_ERROR_INVALID_HANDLE, "unknown function");
    }
    log_call("cuFuncSetAttribute", ", \"function\": \"%s\", \"attribute\": %d, \"value\": %d",
             f->name, attribute, value);
    if (attribute == 8 /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */) {
        f->max_dynamic_shared = value;
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *address, size_t nbytes) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    if (address == NULL || nbytes == 0) {
        return fail("cuMemAlloc", CUDA_ERROR_INVALID_VALUE, "NULL address or 0 bytes");
    }
    if (context_retains == 0) {
        return fail("cuMemAlloc", CUDA_ERROR_INVALID_CONTEXT, "no current context");
    }
    if (capture_refuses(0, 1, NULL) != 0) {
        return fail("cuMemAlloc", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "during a capture");
    }
    if (allocation_count == allocation_capacity) {
        size_t capacity = allocation_capacity ? 2 * allocation_capacity : 64;
        Allocation *grown = realloc(allocations, capacity * sizeof(Allocation));
        if (grown == NULL) {
            return fail("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY, "realloc");
        }
        allocations = grown;
        allocation_capacity = capacity;
    }
    unsigned char *base = aligned_alloc(256, (nbytes + 255) / 256 * 256);
    if (base == NULL) {
        return fail("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY, "aligned_alloc");
    }
    memset(base, 0xA5, nbytes); /* what "uninitialized" device memory reads as */
    allocations[allocation_count++] = (Allocation){base, nbytes};
    *address = (CUdeviceptr)(uintptr_t)base;
    log_call("cuMemAlloc", ", \"bytes\": %zu, \"address\": %llu", nbytes, *address);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr address) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    int index = allocation_index(address);
    if (index < 0) {
        return fail("cuMemFree", CUDA_ERROR_INVALID_VALUE, "not the base of an allocation");
    }
    if (capture_refuses(0, 1, NULL) != 0) {
        return fail("cuMemFree", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "during a capture");
    }
    log_call("cuMemFree", ", \"address\": %llu", address);
    free(allocations[index].base);
    allocations[index] = allocations[--allocation_count];
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t nbytes) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    log_call("cuMemcpyHtoD", ", \"dst\": %llu, \"src\": %llu, \"bytes\": %zu", dst,
             (unsigned long long)(uintptr_t)src, nbytes);
    if (src == NULL || !in_allocation(dst, nbytes)) {
        return fail("cuMemcpyHtoD", CUDA_ERROR_INVALID_VALUE, "range outside an allocation");
    }
    if (capture_refuses(1, 0, NULL) != 0) {
        return fail("cuMemcpyHtoD", CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "during a capture");
    }
    memcpy((void *)(uintptr_t)dst, src, nbytes);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t nbytes) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    log_call("cuMemcpyDtoH", ", \"dst\": %llu, \"src\": %llu, \"bytes\": %zu",
             (unsigned long long)(uintptr_t)dst, src, nbytes);
    if (dst == NULL || !in_allocation(src, nbytes)) {
        return fail("cuMemcpyDtoH", CUDA_ERROR_INVALID_VALUE, "range outside an allocation");
    }
    if (capture_refuses(1, 0, NULL) != 0) {
        return fail("cuMemcpyDtoH", CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "during a capture");
    }
    memcpy(dst, (const void *)(uintptr_t)src, nbytes);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t nbytes,
                                     CUstream stream) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    log_call("cuMemcpyDtoDAsync", ", \"dst\": %llu, \"src\": %llu, \"bytes\": %zu, \"stream\": %d",
             dst, src, nbytes, valid_stream(stream) ? stream_id(stream) : -1);
    if (!valid_stream(stream)) {
        return fail("cuMemcpyDtoDAsync", CUDA_ERROR_INVALID_HANDLE, "unknown stream");
    }
    if (!in_allocation(dst, nbytes) || !in_allocation(src, nbytes)) {
        return fail("cuMemcpyDtoDAsync", CUDA_ERROR_INVALID_VALUE, "range outside an allocation");
    }
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, nbytes);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count, CUstream stream) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    log_call("cuMemsetD32Async", ", \"dst\": %llu, \"value\": %u, \"count\": %zu, \"stream\": %d",
             dst, value, count, valid_stream(stream) ? stream_id(stream) : -1);
    if (!valid_stream(stream)) {
        return fail("cuMemsetD32Async", CUDA_ERROR_INVALID_HANDLE, "unknown stream");
    }
    if (dst % 4 != 0 || count > SIZE_MAX / 4 || !in_allocation(dst, count * 4)) {
        return fail("cuMemsetD32Async", CUDA_ERROR_INVALID_VALUE, "misaligned or out of range");
    }
    if (stream != NULL && ((Stream *)stream)->capture != NULL) {
        Node node = {.dst = dst, .value = value, .count = count, .element = 4};
        CUresult code = capture_node(stream, &node);
        if (code != CUDA_SUCCESS) {
            return fail("cuMemsetD32Async", code, "capture");
        }
        log_call("captured", ", \"what\": \"cuMemsetD32Async\", \"graph\": %d, \"node\": %zu",
                 ((Stream *)stream)->capture->id, ((Stream *)stream)->capture->count - 1);
        pthread_mutex_unlock(&lock);
        return CUDA_SUCCESS;
    }
    uint32_t *words = (uint32_t *)(uintptr_t)dst;
    for (size_t i = 0; i < count; i++) {
        words[i] = value;
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    log_call("cuMemsetD8Async", ", \"dst\": %llu, \"value\": %u, \"count\": %zu, \"stream\": %d", dst,
             value, count, valid_stream(stream) ? stream_id(stream) : -1);
    if (!valid_stream(stream)) {
        return fail("cuMemsetD8Async", CUDA_ERROR_INVALID_HANDLE, "unknown stream");
    }
    if (!in_allocation(dst, count)) {
        return fail("cuMemsetD8Async", CUDA_ERROR_INVALID_VALUE, "out of range");
    }
    if (stream != NULL && ((Stream *)stream)->capture != NULL) {
        Node node = {.dst = dst, .value = value, .count = count, .element = 1};
        CUresult code = capture_node(stream, &node);
        if (code != CUDA_SUCCESS) {
            return fail("cuMemsetD8Async", code, "capture");
        }
        log_call("captured", ", \"what\": \"cuMemsetD8Async\", \"graph\": %d, \"node\": %zu",
                 ((Stream *)stream)->capture->id, ((Stream *)stream)->capture->count - 1);
        pthread_mutex_unlock(&lock);
        return CUDA_SUCCESS;
    }
    memset((void *)(uintptr_t)dst, value, count);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* "name count" lines from FAKE_CUDA_ARITY: the kernelParams entries of a kernel. */
static int kernel_arity(const char *name) {
    const char *path = getenv("FAKE_CUDA_ARITY");
    FILE *file = path != NULL ? fopen(path, "r") : NULL;
    if (file == NULL) {
        return -1;
    }
    char line[512], kernel[300];
    int count, found = -1;
    while (fgets(line, sizeof line, file) != NULL) {
        if (sscanf(line, "%299s %d", kernel, &count) == 2 && strcmp(kernel, name) == 0) {
            found = count;
            break;
        }
    }
    fclose(file);
    return found;
}

/* One launch as a JSON line: the function, grid, block, shared bytes, stream
 * and each kernelParams entry's offset and bytes: a stream launch, one
 * captured (captured: the graph's id, else 0) or a kernel node of a replayed
 * graph. */
static void log_kernel(const char *call, const Node *n, int stream, unsigned long long extra,
                       unsigned long long params, int captured) {
    log_open();
    if (log_file == NULL) {
        return;
    }
    const Function *f = n->function;
    fprintf(log_file,
            "{\"call\": \"%s\", \"function\": \"%s\", \"module\": %d, "
            "\"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], \"shared\": %u, "
            "\"stream\": %d, \"extra\": %llu, \"kernelParams\": %llu, ",
            call, f->name, f->module->id, n->grid[0], n->grid[1], n->grid[2], n->block[0],
            n->block[1], n->block[2], n->shared, stream, extra, params);
    if (captured > 0) {
        fprintf(log_file, "\"captured\": %d, ", captured);
    }
    fputs("\"params\": [", log_file);
    for (int i = 0; i < n->arity; i++) {
        fprintf(log_file, "%s{\"offset\": %lld, \"hex\": \"", i ? ", " : "", n->offsets[i]);
        log_hex(n->params[i], (size_t)n->param_bytes);
        fputs("\"}", log_file);
    }
    fputs("]}\n", log_file);
    fflush(log_file);
}

EXPORT CUresult cuLaunchKernel(CUfunction function, unsigned int gx, unsigned int gy, unsigned int gz,
                               unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                               CUstream stream, void **params, void **extra) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    Function *f = live_function(function);
    if (f == NULL) {
        return fail("cuLaunchKernel", CUDA_ERROR_INVALID_HANDLE, "unknown function");
    }
    if (!valid_stream(stream)) {
        return fail("cuLaunchKernel", CUDA_ERROR_INVALID_HANDLE, "unknown stream");
    }
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || bx * by * bz > 1024) {
        return fail("cuLaunchKernel", CUDA_ERROR_INVALID_VALUE, "bad grid or block");
    }
    if (shared > 48 * 1024 && (int)shared > f->max_dynamic_shared) {
        return fail("cuLaunchKernel", CUDA_ERROR_INVALID_VALUE, "shared memory not opted in");
    }
    int arity = kernel_arity(f->name);
    if (arity < 0) {
        return fail("cuLaunchKernel", CUDA_ERROR_INVALID_VALUE, "kernel not in FAKE_CUDA_ARITY");
    }
    if (arity > 0 && params == NULL) {
        return fail("cuLaunchKernel", CUDA_ERROR_INVALID_VALUE, "NULL kernelParams");
    }
    const char *bytes_text = getenv("FAKE_CUDA_PARAM_BYTES");
    int nbytes = bytes_text != NULL ? atoi(bytes_text) : 8;
    if (nbytes < 0 || nbytes > MAX_PARAM_BYTES) {
        nbytes = 8;
    }
    if (arity > MAX_PARAMS) {
        return fail("cuLaunchKernel", CUDA_ERROR_INVALID_VALUE, "more parameters than the fake keeps");
    }
    /* what the driver reads through kernelParams at the call (a node keeps it) */
    Node *node = calloc(1, sizeof(Node));
    if (node == NULL) {
        return fail("cuLaunchKernel", CUDA_ERROR_OUT_OF_MEMORY, "calloc");
    }
    node->is_kernel = 1;
    node->function = f;
    node->grid[0] = gx, node->grid[1] = gy, node->grid[2] = gz;
    node->block[0] = bx, node->block[1] = by, node->block[2] = bz;
    node->shared = shared;
    node->arity = arity;
    node->param_bytes = nbytes;
    for (int i = 0; i < arity; i++) {
        node->offsets[i] = (long long)((uintptr_t)params[i] - (uintptr_t)params[0]);
        memcpy(node->params[i], params[i], (size_t)nbytes);
    }
    Stream *s = stream;
    if (s != NULL && s->capture != NULL) {
        CUresult code = capture_node(s, node);
        if (code != CUDA_SUCCESS) {
            free(node);
            return fail("cuLaunchKernel", code, "capture");
        }
    }
    log_kernel("cuLaunchKernel", node, stream_id(stream), (unsigned long long)(uintptr_t)extra,
               (unsigned long long)(uintptr_t)params, s != NULL && s->capture ? s->capture->id : 0);
    free(node);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* --- graphs --------------------------------------------------------------------- */

static Graph *live_graph(void *handle) {
    for (Graph *g = graphs; g != NULL; g = g->next) {
        if ((void *)g == handle) {
            return g;
        }
    }
    return NULL;
}

static GraphExec *live_graph_exec(void *handle) {
    for (GraphExec *e = graph_execs; e != NULL; e = e->next) {
        if ((void *)e == handle) {
            return e;
        }
    }
    return NULL;
}

static void unlink_graph(Graph *g) {
    for (Graph **p = &graphs; *p != NULL; p = &(*p)->next) {
        if (*p == g) {
            *p = g->next;
            break;
        }
    }
    free(g->nodes);
    free(g);
}

EXPORT CUresult cuStreamBeginCapture_v2(CUstream stream, int mode) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    log_call("cuStreamBeginCapture", ", \"stream\": %d, \"mode\": %d",
             valid_stream(stream) ? stream_id(stream) : -1, mode);
    if (stream == NULL) {
        return fail("cuStreamBeginCapture", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                    "the legacy stream cannot be captured");
    }
    if (!valid_stream(stream)) {
        return fail("cuStreamBeginCapture", CUDA_ERROR_INVALID_HANDLE, "unknown stream");
    }
    if (mode < 0 || mode > CAPTURE_MODE_RELAXED) {
        return fail("cuStreamBeginCapture", CUDA_ERROR_INVALID_VALUE, "unknown capture mode");
    }
    Stream *s = stream;
    if (s->capture != NULL) {
        return fail("cuStreamBeginCapture", CUDA_ERROR_ILLEGAL_STATE, "already capturing");
    }
    Graph *g = calloc(1, sizeof(Graph));
    if (g == NULL) {
        return fail("cuStreamBeginCapture", CUDA_ERROR_OUT_OF_MEMORY, "calloc");
    }
    g->magic = MAGIC_GRAPH;
    g->id = next_graph_id++;
    g->next = graphs;
    graphs = g;
    s->capture = g;
    s->capture_mode = mode;
    s->invalidated = 0;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamEndCapture(CUstream stream, CUgraph *graph) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    if (graph == NULL || stream == NULL || !valid_stream(stream)) {
        return fail("cuStreamEndCapture", CUDA_ERROR_INVALID_VALUE, "NULL graph or bad stream");
    }
    Stream *s = stream;
    Graph *g = s->capture;
    if (g == NULL) {
        return fail("cuStreamEndCapture", CUDA_ERROR_ILLEGAL_STATE, "not capturing");
    }
    s->capture = NULL;
    *graph = NULL;
    if (s->invalidated != 0) {
        unlink_graph(g);
        return fail("cuStreamEndCapture", CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "invalidated");
    }
    *graph = g;
    log_call("cuStreamEndCapture", ", \"stream\": %d, \"graph\": %d, \"nodes\": %zu", s->id, g->id,
             g->count);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph,
                                            unsigned long long flags) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    Graph *g = live_graph(graph);
    if (exec == NULL || g == NULL) {
        return fail("cuGraphInstantiate", CUDA_ERROR_INVALID_VALUE, "NULL exec or unknown graph");
    }
    for (Stream *s = streams; s != NULL; s = s->next) {
        if (s->capture == g) {
            return fail("cuGraphInstantiate", CUDA_ERROR_ILLEGAL_STATE, "graph still capturing");
        }
    }
    GraphExec *e = calloc(1, sizeof(GraphExec));
    Node *nodes = g->count ? malloc(g->count * sizeof(Node)) : NULL;
    if (e == NULL || (g->count && nodes == NULL)) {
        free(e);
        free(nodes);
        return fail("cuGraphInstantiate", CUDA_ERROR_OUT_OF_MEMORY, "malloc");
    }
    if (g->count) {
        memcpy(nodes, g->nodes, g->count * sizeof(Node));
    }
    e->magic = MAGIC_GRAPH_EXEC;
    e->id = next_graph_id++;
    e->graph = g->id;
    e->nodes = nodes;
    e->count = g->count;
    e->next = graph_execs;
    graph_execs = e;
    *exec = e;
    log_call("cuGraphInstantiate", ", \"graph\": %d, \"exec\": %d, \"flags\": %llu, \"nodes\": %zu",
             g->id, e->id, flags, e->count);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    GraphExec *e = live_graph_exec(exec);
    if (e == NULL) {
        return fail("cuGraphLaunch", CUDA_ERROR_INVALID_VALUE, "unknown executable graph");
    }
    if (!valid_stream(stream)) {
        return fail("cuGraphLaunch", CUDA_ERROR_INVALID_HANDLE, "unknown stream");
    }
    if (stream != NULL && ((Stream *)stream)->capture != NULL) {
        return fail("cuGraphLaunch", CUDA_ERROR_NOT_SUPPORTED, "child graphs are not faked");
    }
    /* validate every node first: a launch that cannot run runs nothing */
    for (size_t i = 0; i < e->count; i++) {
        Node *n = &e->nodes[i];
        if (n->is_kernel ? live_function(n->function) == NULL
                         : !in_allocation(n->dst, n->count * (size_t)n->element)) {
            return fail("cuGraphLaunch", CUDA_ERROR_INVALID_VALUE, "a node's function or memory is gone");
        }
    }
    log_call("cuGraphLaunch", ", \"exec\": %d, \"stream\": %d, \"nodes\": %zu", e->id,
             stream_id(stream), e->count);
    for (size_t i = 0; i < e->count; i++) {
        Node *n = &e->nodes[i];
        if (n->is_kernel) {
            log_kernel("graph kernel node", n, stream_id(stream), 0, 0, 0);
        } else if (n->element == 4) {
            uint32_t *words = (uint32_t *)(uintptr_t)n->dst;
            for (size_t k = 0; k < n->count; k++) {
                words[k] = n->value;
            }
            log_call("graph memset node", ", \"dst\": %llu, \"value\": %u, \"count\": %zu, \"element\": 4",
                     n->dst, n->value, n->count);
        } else {
            memset((void *)(uintptr_t)n->dst, (int)n->value, n->count);
            log_call("graph memset node", ", \"dst\": %llu, \"value\": %u, \"count\": %zu, \"element\": 1",
                     n->dst, n->value, n->count);
        }
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    for (GraphExec **p = &graph_execs; *p != NULL; p = &(*p)->next) {
        if ((void *)*p == exec) {
            GraphExec *e = *p;
            log_call("cuGraphExecDestroy", ", \"exec\": %d", e->id);
            *p = e->next;
            free(e->nodes);
            free(e);
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    }
    return fail("cuGraphExecDestroy", CUDA_ERROR_INVALID_VALUE, "unknown executable graph");
}

EXPORT CUresult cuGraphDestroy(CUgraph graph) {
    pthread_mutex_lock(&lock);
    CHECK_INIT();
    Graph *g = live_graph(graph);
    if (g == NULL) {
        return fail("cuGraphDestroy", CUDA_ERROR_INVALID_VALUE, "unknown graph");
    }
    for (Stream *s = streams; s != NULL; s = s->next) {
        if (s->capture == g) {
            return fail("cuGraphDestroy", CUDA_ERROR_ILLEGAL_STATE, "graph still capturing");
        }
    }
    log_call("cuGraphDestroy", ", \"graph\": %d", g->id);
    unlink_graph(g);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* --- everything else: named stubs that return an error ------------------------- */

#define STUB_COUNT 1000
static const char *stub_names[STUB_COUNT];
static int stubs_used;

static CUresult unimplemented(int index) {
    pthread_mutex_lock(&lock);
    log_call("unimplemented", ", \"name\": \"%s\", \"error\": %d",
             index < stubs_used ? stub_names[index] : "?", CUDA_ERROR_NOT_SUPPORTED);
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* stub_1000 .. stub_1999: each knows its index, so a call logs the name it was asked by. */
#define S(n) static CUresult stub_##n(void) { return unimplemented(n - 1000); }
#define S10(p) S(p##0) S(p##1) S(p##2) S(p##3) S(p##4) S(p##5) S(p##6) S(p##7) S(p##8) S(p##9)
#define S100(p) S10(p##0) S10(p##1) S10(p##2) S10(p##3) S10(p##4) S10(p##5) S10(p##6) S10(p##7) \
    S10(p##8) S10(p##9)
S100(10) S100(11) S100(12) S100(13) S100(14) S100(15) S100(16) S100(17) S100(18) S100(19)
#undef S
#define S(n) (void *)stub_##n,
static void *const stubs[STUB_COUNT] = {
    S100(10) S100(11) S100(12) S100(13) S100(14) S100(15) S100(16) S100(17) S100(18) S100(19)
};
#undef S

static CUresult unimplemented_overflow(void) {
    pthread_mutex_lock(&lock);
    log_call("unimplemented", ", \"name\": \"?\", \"error\": %d", CUDA_ERROR_NOT_SUPPORTED);
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* --- cuGetProcAddress ---------------------------------------------------------- */

/* base name, the first CUDA version of that ABI, the function */
static const struct {
    const char *name;
    int version;
    void *function;
} table[] = {
    {"cuGetErrorName", 6000, (void *)cuGetErrorName},
    {"cuGetErrorString", 6000, (void *)cuGetErrorString},
    {"cuDriverGetVersion", 2020, (void *)cuDriverGetVersion},
    {"cuInit", 2000, (void *)cuInit},
    {"cuDeviceGetCount", 2000, (void *)cuDeviceGetCount},
    {"cuDeviceGet", 2000, (void *)cuDeviceGet},
    {"cuDeviceGetAttribute", 2000, (void *)cuDeviceGetAttribute},
    {"cuDevicePrimaryCtxRetain", 7000, (void *)cuDevicePrimaryCtxRetain},
    {"cuDevicePrimaryCtxRelease", 11000, (void *)cuDevicePrimaryCtxRelease_v2},
    {"cuCtxSetCurrent", 4000, (void *)cuCtxSetCurrent},
    {"cuStreamCreate", 2000, (void *)cuStreamCreate},
    {"cuStreamDestroy", 4000, (void *)cuStreamDestroy_v2},
    {"cuStreamSynchronize", 2000, (void *)cuStreamSynchronize},
    {"cuModuleLoadData", 2000, (void *)cuModuleLoadData},
    {"cuModuleUnload", 2000, (void *)cuModuleUnload},
    {"cuModuleGetFunction", 2000, (void *)cuModuleGetFunction},
    {"cuFuncSetAttribute", 9000, (void *)cuFuncSetAttribute},
    {"cuMemAlloc", 3020, (void *)cuMemAlloc_v2},
    {"cuMemFree", 3020, (void *)cuMemFree_v2},
    {"cuMemcpyHtoD", 3020, (void *)cuMemcpyHtoD_v2},
    {"cuMemcpyDtoH", 3020, (void *)cuMemcpyDtoH_v2},
    {"cuMemcpyDtoDAsync", 3020, (void *)cuMemcpyDtoDAsync_v2},
    {"cuMemsetD32Async", 3020, (void *)cuMemsetD32Async},
    {"cuMemsetD8Async", 3020, (void *)cuMemsetD8Async},
    {"cuLaunchKernel", 4000, (void *)cuLaunchKernel},
    {"cuStreamBeginCapture", 10010, (void *)cuStreamBeginCapture_v2},
    {"cuStreamEndCapture", 10000, (void *)cuStreamEndCapture},
    {"cuGraphInstantiateWithFlags", 11040, (void *)cuGraphInstantiateWithFlags},
    {"cuGraphInstantiate", 12000, (void *)cuGraphInstantiateWithFlags},
    {"cuGraphLaunch", 10000, (void *)cuGraphLaunch},
    {"cuGraphExecDestroy", 10000, (void *)cuGraphExecDestroy},
    {"cuGraphDestroy", 10000, (void *)cuGraphDestroy},
};

static int lookups, lookups_stubbed;

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    int *status) {
    if (pfn == NULL || symbol == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&lock);
    lookups++;
    void *found = NULL;
    int best = -1;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (strcmp(table[i].name, symbol) == 0 && table[i].version <= version &&
            table[i].version > best) {
            found = table[i].function;
            best = table[i].version;
        }
    }
    if (found != NULL) {
        log_call("cuGetProcAddress", ", \"symbol\": \"%s\", \"version\": %d, \"flags\": %llu, "
                 "\"abi\": %d", symbol, version, flags, best);
    } else {
        /* an older ABI of one we implement, or one we do not: a stub that returns an error */
        lookups_stubbed++;
        if (stubs_used < STUB_COUNT) {
            stub_names[stubs_used] = strdup(symbol);
            found = stubs[stubs_used++];
        } else {
            found = (void *)unimplemented_overflow;
        }
    }
    *pfn = found;
    if (status != NULL) {
        *status = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags) {
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}

/* Not a driver API: what is live, for the bench's leak check (ctypes). */
EXPORT void fake_cuda_live(int counts[7]) {
    pthread_mutex_lock(&lock);
    int m = 0, f = 0, s = 0, g = 0, e = 0;
    for (Module *p = modules; p != NULL; p = p->next) m++;
    for (Function *p = functions; p != NULL; p = p->next) f++;
    for (Stream *p = streams; p != NULL; p = p->next) s++;
    for (Graph *p = graphs; p != NULL; p = p->next) g++;
    for (GraphExec *p = graph_execs; p != NULL; p = p->next) e++;
    counts[0] = (int)allocation_count;
    counts[1] = m;
    counts[2] = f;
    counts[3] = s;
    counts[4] = context_retains;
    counts[5] = g;
    counts[6] = e;
    pthread_mutex_unlock(&lock);
}

EXPORT void fake_cuda_lookups(int counts[2]) {
    counts[0] = lookups;
    counts[1] = lookups_stubbed;
}
