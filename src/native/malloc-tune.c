/*
 * malloc-tune: sets glibc malloc's mmap and trim thresholds and its arena count from inside the running
 * process, which is what GLIBC_TUNABLES=glibc.malloc.mmap_threshold=...:glibc.malloc.trim_threshold=...:
 * glibc.malloc.arena_max=... does at exec time.
 *
 * Why: by default glibc raises its mmap threshold each time a large block is freed (up to 32 MiB), so
 * after a burst of large buffers (uWebSockets.js frames, request bodies) later ones come from the heap,
 * and freed heap in the middle of it is never given back: RSS stayed at 540 MiB after a burst that
 * left 100 MiB live. A fixed threshold (set here, which also turns the dynamic one off) keeps large
 * blocks in mmap, returned on free, and a low trim threshold gives back the top of the heap.
 *
 * A Node-API module (ABI-stable across Node versions) with its few declarations written out here, so
 * it builds with a bare C compiler for each target, native or cross: no Node headers, no libc headers
 * or start files (it links with -nostdlib; mallopt and napi_* resolve against the running node).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* From glibc's <malloc.h>: fixed values of its mallopt() interface. */
#define M_TRIM_THRESHOLD (-1)
#define M_MMAP_THRESHOLD (-3)
#define M_ARENA_MAX (-8)
extern int mallopt(int param, int value);
extern int malloc_trim(size_t pad);

typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status; /* an enum in node_api_types.h; napi_ok is 0 */
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);

extern napi_status napi_get_cb_info(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv,
                                    napi_value *this_arg, void **data);
extern napi_status napi_get_value_int32(napi_env env, napi_value value, int32_t *result);
extern napi_status napi_get_boolean(napi_env env, bool value, napi_value *result);
extern napi_status napi_create_function(napi_env env, const char *name, size_t length, napi_callback cb, void *data,
                                        napi_value *result);
extern napi_status napi_set_named_property(napi_env env, napi_value object, const char *name, napi_value value);
extern napi_status napi_throw_type_error(napi_env env, const char *code, const char *msg);

/*
 * setThresholds(mmapThreshold, trimThreshold, arenaMax): true when glibc took all three values. arenaMax
 * caps the heaps (arenas) threads other than the first get: each keeps its own free memory resident.
 */
static napi_value set_thresholds(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  int32_t mmap_threshold = 0;
  int32_t trim_threshold = 0;
  int32_t arena_max = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != 0 || argc < 3 ||
      napi_get_value_int32(env, argv[0], &mmap_threshold) != 0 ||
      napi_get_value_int32(env, argv[1], &trim_threshold) != 0 ||
      napi_get_value_int32(env, argv[2], &arena_max) != 0 || mmap_threshold <= 0 || trim_threshold <= 0 || arena_max <= 0) {
    napi_throw_type_error(env, NULL, "setThresholds(mmapThreshold, trimThreshold, arenaMax) takes three positive integers");
    return NULL;
  }
  bool ok = mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1;
  ok = mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1 && ok;
  ok = mallopt(M_ARENA_MAX, arena_max) == 1 && ok;
  napi_value result = NULL;
  napi_get_boolean(env, ok, &result);
  return result;
}

/*
 * trim(): gives the free pages inside the heap back to the system (malloc_trim(0)); the trim threshold
 * only returns free memory at the top of the heap, and start-up leaves holes below live blocks.
 * True when some memory was released.
 */
static napi_value trim(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value result = NULL;
  napi_get_boolean(env, malloc_trim(0) == 1, &result);
  return result;
}

static bool export_function(napi_env env, napi_value exports, const char *name, napi_callback cb) {
  napi_value fn = NULL;
  return napi_create_function(env, name, SIZE_MAX, cb, NULL, &fn) == 0 && napi_set_named_property(env, exports, name, fn) == 0;
}

/* Node looks this symbol up when a module does not register itself. */
__attribute__((visibility("default"))) napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  if (!export_function(env, exports, "setThresholds", set_thresholds) || !export_function(env, exports, "trim", trim)) {
    return NULL;
  }
  return exports;
}
