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
 * A Node-API module (ABI-stable across Node versions) that builds with a bare C compiler for each target,
 * native or cross, and links with -nostdlib: what it calls is declared in node-exports.h or below, and
 * resolves against the running node.
 */
#include "node-exports.h"

/* From glibc's <malloc.h>: fixed values of its mallopt() interface. */
#define M_TRIM_THRESHOLD (-1)
#define M_MMAP_THRESHOLD (-3)
#define M_ARENA_MAX (-8)
extern int mallopt(int param, int value);
extern int malloc_trim(size_t pad);

extern napi_status napi_get_boolean(napi_env env, bool value, napi_value *result);
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

/*
 * The heaps of threads other than the main one (glibc's arenas) give their free top back only from a
 * free() in that arena that leaves a free block of 64 KiB or more, checked against the trim threshold of
 * that moment; malloc_trim() returns the free pages between their blocks but never their top. So whatever V8's and
 * libuv's threads freed while start-up's high threshold held stayed resident once they went quiet:
 * 2.1-4.6 MiB of an idle service in half the starts. The way to reach an arena is to be a thread in it:
 * threads started together each attach to the next arena in glibc's rotation (enough of them for every
 * arena there can be), and each frees a block of ARENA_BLOCK bytes there, which trims that arena's top.
 */
#define ARENA_VISITORS 8
/* Below the mmap threshold (72 KiB), so it comes from the arena; 64 KiB or more, so its free trims. */
#define ARENA_BLOCK (68 * 1024)

typedef struct {
  uv_mutex_t lock;
  uv_cond_t all_here;
  int arrived;
  int expected;
} visit_t;

static void visit_arena(void *arg) {
  visit_t *visit = arg;
  void *block = malloc(ARENA_BLOCK);
  uv_mutex_lock(&visit->lock);
  visit->arrived++;
  uv_cond_broadcast(&visit->all_here);
  /* Alive together until all have their block: a thread that left would hand its arena to the next. */
  while (visit->arrived < visit->expected) uv_cond_wait(&visit->all_here, &visit->lock);
  uv_mutex_unlock(&visit->lock);
  free(block);
}

/*
 * trimThreadHeaps(): gives back the free top of every thread's heap (see above). True when all the
 * visiting threads ran.
 */
static napi_value trim_thread_heaps(napi_env env, napi_callback_info info) {
  (void)info;
  visit_t visit = {.arrived = 0, .expected = ARENA_VISITORS};
  uv_thread_t threads[ARENA_VISITORS];
  int started = 0;
  bool ok = uv_mutex_init(&visit.lock) == 0;
  if (ok && uv_cond_init(&visit.all_here) != 0) {
    uv_mutex_destroy(&visit.lock);
    ok = false;
  }
  if (ok) {
    while (started < ARENA_VISITORS && uv_thread_create(&threads[started], visit_arena, &visit) == 0) started++;
    uv_mutex_lock(&visit.lock);
    visit.expected = started; /* the ones that could not start are not waited for */
    uv_cond_broadcast(&visit.all_here);
    uv_mutex_unlock(&visit.lock);
    for (int i = 0; i < started; i++) uv_thread_join(&threads[i]);
    uv_cond_destroy(&visit.all_here);
    uv_mutex_destroy(&visit.lock);
    ok = started == ARENA_VISITORS;
  }
  napi_value result = NULL;
  napi_get_boolean(env, ok, &result);
  return result;
}

static bool export_function(napi_env env, napi_value exports, const char *name, napi_callback cb) {
  napi_value fn = NULL;
  return napi_create_function(env, name, SIZE_MAX, cb, NULL, &fn) == 0 && napi_set_named_property(env, exports, name, fn) == 0;
}

/* Node looks this symbol up when a module does not register itself. */
__attribute__((visibility("default"))) napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  if (!export_function(env, exports, "setThresholds", set_thresholds) || !export_function(env, exports, "trim", trim) ||
      !export_function(env, exports, "trimThreadHeaps", trim_thread_heaps)) {
    return NULL;
  }
  return exports;
}
