/*
 * opus-decode: upstream Opus packets decoded by the system's libopus (libopus.so.0, opened with dlopen),
 * inline on the calling thread or on decoder threads of our own.
 *
 * Why native: the bundled wasm libopus takes ~27 us per 20 ms packet on x64 where the same library built
 * natively takes ~19 us (and wasm has no NEON on a Pi), and why threads of our own: handing a batch to a
 * Node worker thread and back costs ~50 us of CPU per hand-over (two V8 event loops woken, messages
 * cloned), more than the decoding it moves. Here a hand-over is a mutex, a condition variable and, per
 * batch of results, one Node-API thread-safe call.
 *
 * libopus is opened at run time, not linked: the addon then builds with a bare cross compiler for each
 * target, and a machine without libopus0 still runs the service (on the wasm decoder, which it says).
 * opus_decode (int16 output) is used: it is exactly what src/voice/opus/pcm.ts reproduces for the wasm
 * decoder (soft clipping, then FLOAT2INT16), so both paths give the same PCM sample for sample.
 *
 * The JavaScript side (src/voice/opus/native-opus.ts) owns the protocol: sessions are slots (small
 * integers it hands out and reuses), jobs are int32 quadruples (op, slot, a, b) with the packets of a
 * batch one after another, and each thread answers a batch with int32 triples (status, offset, bytes;
 * offset -1 for an open) and the PCM one packet after another. Jobs run in the order submitted; every
 * job but close answers (a refuse job, a packet JavaScript refused, answers ST_REFUSED at once).
 *
 * Like malloc-tune.c it needs no headers beyond the compiler's own and node-exports.h: Node-API, the few
 * libc functions and libuv's threads, locks and dlopen are declared there or here and resolve against the
 * running node, which exports them.
 */
#include "node-exports.h"

extern void *calloc(size_t count, size_t size);
extern void *realloc(void *ptr, size_t size);
extern void *memcpy(void *dest, const void *src, size_t n);
extern size_t strlen(const char *s);

/* libuv's dlopen (uv.h). */
typedef struct {
  void *handle;
  char *errmsg;
} uv_lib_t;
extern int uv_dlopen(const char *filename, uv_lib_t *lib);
extern int uv_dlsym(uv_lib_t *lib, const char *name, void **ptr);
extern const char *uv_dlerror(const uv_lib_t *lib);
extern void uv_dlclose(uv_lib_t *lib);

typedef struct napi_threadsafe_function__ *napi_threadsafe_function;
typedef void (*napi_finalize)(napi_env env, void *data, void *hint);
typedef void (*napi_threadsafe_function_call_js)(napi_env env, napi_value js_callback, void *context, void *data);
enum { napi_tsfn_release = 0 };
enum { napi_tsfn_nonblocking = 0 };

extern napi_status napi_get_value_string_utf8(napi_env, napi_value, char *, size_t, size_t *);
extern napi_status napi_get_buffer_info(napi_env, napi_value, void **, size_t *);
extern napi_status napi_create_int32(napi_env, int32_t, napi_value *);
extern napi_status napi_create_string_utf8(napi_env, const char *, size_t, napi_value *);
extern napi_status napi_create_arraybuffer(napi_env, size_t, void **, napi_value *);
extern napi_status napi_create_buffer_copy(napi_env, size_t, const void *, void **, napi_value *);
extern napi_status napi_create_external(napi_env, void *, napi_finalize, void *, napi_value *);
extern napi_status napi_get_value_external(napi_env, napi_value, void **);
extern napi_status napi_get_undefined(napi_env, napi_value *);
extern napi_status napi_call_function(napi_env, napi_value, napi_value, size_t, const napi_value *, napi_value *);
extern napi_status napi_throw_error(napi_env, const char *, const char *);
extern napi_status napi_create_threadsafe_function(napi_env, napi_value, napi_value, napi_value, size_t, size_t, void *,
                                                   napi_finalize, void *, napi_threadsafe_function_call_js,
                                                   napi_threadsafe_function *);
extern napi_status napi_call_threadsafe_function(napi_threadsafe_function, void *, int);
extern napi_status napi_release_threadsafe_function(napi_threadsafe_function, int);
extern napi_status napi_unref_threadsafe_function(napi_env, napi_threadsafe_function);
extern napi_status napi_ref_threadsafe_function(napi_env, napi_threadsafe_function);
extern napi_status napi_get_value_bool(napi_env, napi_value, bool *);
extern void napi_fatal_error(const char *location, size_t location_len, const char *message, size_t message_len);
extern napi_status napi_add_env_cleanup_hook(napi_env, void (*)(void *), void *);
extern napi_status napi_remove_env_cleanup_hook(napi_env, void (*)(void *), void *);

/* libopus, as dlopen finds it. */
typedef struct OpusDecoder OpusDecoder;
static OpusDecoder *(*opus_decoder_create)(int32_t fs, int channels, int *error);
static int (*opus_decode)(OpusDecoder *st, const unsigned char *data, int32_t len, int16_t *pcm, int frame_size, int fec);
static void (*opus_decoder_destroy)(OpusDecoder *st);
static const char *(*opus_get_version_string)(void);

/*
 * Memory for a batch or its answer, or the end of the process: a job without its answer would put
 * every later answer against the wrong packet, and a process out of memory cannot go on anyway (Node
 * itself stops the same way).
 */
static void *must(void *p) {
  if (!p) napi_fatal_error("opus-decode", SIZE_MAX, "out of memory", SIZE_MAX);
  return p;
}

/* The protocol (mirrored in native-opus.ts). */
enum { OP_OPEN = 0, OP_DECODE = 1, OP_CLOSE = 2, OP_REFUSE = 3 };
enum { JOB_FIELDS = 4, RESULT_FIELDS = 3 };
/* Statuses besides libopus' own negative codes and 1 (done). */
enum { ST_EMPTY = -100, ST_TOO_LARGE = -101, ST_NO_DECODER = -102, ST_NO_MEMORY = -103, ST_REFUSED = -104 };
/* libopus' longest frame, 120 ms at 48 kHz, per channel; and the most PCM one packet decodes to. */
#define MAX_FRAME 5760
#define MAX_PCM_BYTES (MAX_FRAME * 2 * (int)sizeof(int16_t))

/* Decoder states by slot; each table belongs to one thread (a decoder thread, or the caller's). */
typedef struct {
  OpusDecoder **states;
  int32_t *channels;
  int32_t capacity;
} slots_t;

static void slots_reserve(slots_t *s, int32_t slot) {
  if (slot < s->capacity) return;
  int32_t capacity = s->capacity ? s->capacity : 64;
  while (capacity <= slot) capacity *= 2;
  s->states = must(realloc(s->states, (size_t)capacity * sizeof *s->states));
  s->channels = must(realloc(s->channels, (size_t)capacity * sizeof *s->channels));
  for (int32_t i = s->capacity; i < capacity; i++) s->states[i] = NULL, s->channels[i] = 0;
  s->capacity = capacity;
}

static void slot_close(slots_t *s, int32_t slot) {
  if (slot < 0 || slot >= s->capacity || !s->states[slot]) return;
  opus_decoder_destroy(s->states[slot]);
  s->states[slot] = NULL;
}

static int32_t slot_open(slots_t *s, int32_t slot, int32_t rate, int32_t channels) {
  if (slot < 0) return -1;
  slots_reserve(s, slot);
  slot_close(s, slot);
  int error = 0;
  OpusDecoder *st = opus_decoder_create(rate, channels, &error);
  if (!st) return error < 0 ? error : ST_NO_MEMORY;
  s->states[slot] = st;
  s->channels[slot] = channels;
  return 1;
}

static void slots_free(slots_t *s) {
  for (int32_t i = 0; i < s->capacity; i++) slot_close(s, i);
  free(s->states);
  free(s->channels);
  s->states = NULL, s->channels = NULL, s->capacity = 0;
}

/* Decodes into `out` (room for MAX_PCM_BYTES); the status, and the PCM bytes written in *bytes. */
static int32_t slot_decode(slots_t *s, int32_t slot, const uint8_t *packet, int32_t length, int32_t max_per_channel,
                           int16_t *out, int32_t *bytes) {
  *bytes = 0;
  if (slot < 0 || slot >= s->capacity || !s->states[slot]) return ST_NO_DECODER;
  /* libopus conceals 120 ms for an empty packet: never what a caller meant. */
  if (length <= 0) return ST_EMPTY;
  int32_t channels = s->channels[slot];
  if (length > max_per_channel * channels) return ST_TOO_LARGE;
  int samples = opus_decode(s->states[slot], packet, length, out, MAX_FRAME, 0);
  if (samples <= 0) return samples;
  *bytes = samples * channels * (int32_t)sizeof(int16_t);
  return 1;
}

/* ---- decoder threads ---- */

typedef struct batch {
  struct batch *next;
  int32_t *jobs;
  size_t job_count;
  uint8_t *packets;
} batch_t;

typedef struct {
  int32_t thread;
  int32_t *results;
  size_t result_count;
  uint8_t *pcm;
  size_t pcm_used;
  size_t pcm_capacity;
} answer_t;

struct pool;

typedef struct {
  struct pool *pool;
  int32_t index;
  bool started;
  uv_thread_t thread;
  uv_mutex_t lock;
  uv_cond_t wake;
  batch_t *head;
  batch_t *tail;
  bool stopping;
  slots_t slots;
} worker_t;

typedef struct pool {
  int32_t thread_count;
  int32_t max_per_channel;
  napi_threadsafe_function deliver;
  bool stopped;
  worker_t *workers;
} pool_t;

static void batch_free(batch_t *b) {
  free(b->jobs);
  free(b->packets);
  free(b);
}

static void answer_free(answer_t *a) {
  free(a->results);
  free(a->pcm);
  free(a);
}

/* Room in the answer for `pcm` more bytes of PCM. */
static void pcm_room(answer_t *a, size_t pcm) {
  if (a->pcm_used + pcm <= a->pcm_capacity) return;
  size_t capacity = a->pcm_capacity ? a->pcm_capacity : 16384;
  while (capacity < a->pcm_used + pcm) capacity *= 2;
  a->pcm = must(realloc(a->pcm, capacity));
  a->pcm_capacity = capacity;
}

/* Runs the jobs of a list of batches, in order, into one answer. */
static answer_t *run_batches(worker_t *w, batch_t *list) {
  answer_t *a = must(calloc(1, sizeof *a));
  a->thread = w->index;
  size_t jobs = 0;
  for (batch_t *b = list; b; b = b->next) jobs += b->job_count;
  a->results = must(malloc((jobs ? jobs : 1) * RESULT_FIELDS * sizeof(int32_t)));
  for (batch_t *b = list, *next; b; b = next) {
    next = b->next;
    size_t offset = 0;
    for (size_t j = 0; j < b->job_count; j++) {
      const int32_t *job = b->jobs + j * JOB_FIELDS;
      int32_t status, bytes = 0;
      size_t at = 0;
      if (job[0] == OP_CLOSE) {
        slot_close(&w->slots, job[1]);
        continue;
      }
      if (job[0] == OP_OPEN) {
        status = slot_open(&w->slots, job[1], job[2], job[3]);
      } else if (job[0] == OP_REFUSE) {
        /* A packet JavaScript refused (its size): answered in its place, in order. */
        status = ST_REFUSED;
      } else {
        const uint8_t *packet = b->packets + offset;
        offset += (size_t)(job[2] > 0 ? job[2] : 0);
        pcm_room(a, MAX_PCM_BYTES);
        at = a->pcm_used;
        status = slot_decode(&w->slots, job[1], packet, job[2], w->pool->max_per_channel, (int16_t *)(a->pcm + at), &bytes);
        a->pcm_used += (size_t)bytes;
      }
      int32_t *r = a->results + a->result_count++ * RESULT_FIELDS;
      /* An open has no PCM: offset -1 tells its failure from a decode's. */
      r[0] = status, r[1] = job[0] == OP_OPEN ? -1 : (int32_t)at, r[2] = bytes;
    }
    batch_free(b);
  }
  return a;
}

static void worker_main(void *arg) {
  worker_t *w = arg;
  for (;;) {
    uv_mutex_lock(&w->lock);
    while (!w->head && !w->stopping) uv_cond_wait(&w->wake, &w->lock);
    if (w->stopping) {
      uv_mutex_unlock(&w->lock);
      break;
    }
    /* Everything queued so far, answered at once: one call into JavaScript for all of it. */
    batch_t *list = w->head;
    w->head = w->tail = NULL;
    uv_mutex_unlock(&w->lock);
    answer_t *a = run_batches(w, list);
    if (napi_call_threadsafe_function(w->pool->deliver, a, napi_tsfn_nonblocking) != 0) answer_free(a);
  }
}

/* On the event loop: one thread's answer to JavaScript as (thread, results, pcm). */
static void deliver_answer(napi_env env, napi_value callback, void *context, void *data) {
  (void)context;
  answer_t *a = data;
  if (env && callback) {
    napi_value argv[3], undefined;
    void *bytes = NULL;
    size_t results_bytes = a->result_count * RESULT_FIELDS * sizeof(int32_t);
    if (napi_create_int32(env, a->thread, &argv[0]) == 0 &&
        napi_create_arraybuffer(env, results_bytes, &bytes, &argv[1]) == 0) {
      if (results_bytes) memcpy(bytes, a->results, results_bytes);
      if (napi_create_arraybuffer(env, a->pcm_used, &bytes, &argv[2]) == 0) {
        if (a->pcm_used) memcpy(bytes, a->pcm, a->pcm_used);
        napi_get_undefined(env, &undefined);
        napi_call_function(env, undefined, callback, 3, argv, NULL);
      }
    }
  }
  answer_free(a);
}

/*
 * Stops and joins the threads and releases the delivery function. The pool_t itself is never freed (a
 * few hundred bytes per pool, one pool per service): JavaScript may still hold its handle.
 */
static void pool_stop(pool_t *p) {
  if (p->stopped) return;
  p->stopped = true;
  for (int32_t i = 0; i < p->thread_count; i++) {
    worker_t *w = &p->workers[i];
    if (!w->started) continue;
    uv_mutex_lock(&w->lock);
    w->stopping = true;
    uv_cond_signal(&w->wake);
    uv_mutex_unlock(&w->lock);
    uv_thread_join(&w->thread);
    for (batch_t *b = w->head, *next; b; b = next) next = b->next, batch_free(b);
    w->head = w->tail = NULL;
    slots_free(&w->slots);
  }
  napi_release_threadsafe_function(p->deliver, napi_tsfn_release);
}

/* Stops a pool's threads when its Node environment goes away (a worker thread's, or at exit). */
static void pool_cleanup(void *data) {
  pool_stop(data);
}

/* ---- JavaScript functions ---- */

static bool args(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != 0 || argc < want) {
    napi_throw_error(env, NULL, "opus-decode: missing arguments");
    return false;
  }
  return true;
}

static bool int_arg(napi_env env, napi_value v, int32_t *out) {
  if (napi_get_value_int32(env, v, out) == 0) return true;
  napi_throw_error(env, NULL, "opus-decode: an argument is not a number");
  return false;
}

static bool libopus_loaded(napi_env env) {
  if (opus_decode) return true;
  napi_throw_error(env, NULL, "opus-decode: libopus is not loaded (call load first)");
  return false;
}

/* Copies `text` into `out` (of `size` bytes), cut short if need be. */
static void copy_text(char *out, size_t size, const char *text) {
  size_t n = strlen(text);
  if (n >= size) n = size - 1;
  memcpy(out, text, n);
  out[n] = 0;
}

/*
 * load(file): opens libopus (once; called from the event loop only); returns its version string.
 * Throws with the loader's reason.
 */
static napi_value js_load(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  char file[512];
  size_t length = 0;
  if (!args(env, info, 1, argv)) return NULL;
  if (napi_get_value_string_utf8(env, argv[0], file, sizeof file, &length) != 0 || length == 0 || length >= sizeof file - 1) {
    napi_throw_error(env, NULL, "opus-decode: load(file) takes a library name");
    return NULL;
  }
  if (!opus_decode) {
    static uv_lib_t lib;
    char reason[600];
    if (uv_dlopen(file, &lib) != 0) {
      copy_text(reason, sizeof reason, uv_dlerror(&lib));
      uv_dlclose(&lib);
      napi_throw_error(env, NULL, reason);
      return NULL;
    }
    void *create = NULL, *destroy = NULL, *version = NULL, *decode = NULL;
    if (uv_dlsym(&lib, "opus_decoder_create", &create) != 0 || uv_dlsym(&lib, "opus_decoder_destroy", &destroy) != 0 ||
        uv_dlsym(&lib, "opus_get_version_string", &version) != 0 || uv_dlsym(&lib, "opus_decode", &decode) != 0) {
      copy_text(reason, sizeof reason - 48, file);
      size_t n = strlen(reason);
      copy_text(reason + n, sizeof reason - n, " does not export libopus' decoder functions");
      uv_dlclose(&lib);
      napi_throw_error(env, NULL, reason);
      return NULL;
    }
    opus_decoder_create = create;
    opus_decoder_destroy = destroy;
    opus_get_version_string = version;
    opus_decode = decode;
  }
  napi_value result;
  napi_create_string_utf8(env, opus_get_version_string(), SIZE_MAX, &result);
  return result;
}

/* The caller's own decoders (inline decoding), used from the event loop only. */
static slots_t inline_slots;
static int16_t inline_pcm[MAX_FRAME * 2];

/* openInline(slot, rate, channels): 1, or a status. */
static napi_value js_open_inline(napi_env env, napi_callback_info info) {
  napi_value argv[3], result;
  int32_t slot, rate, channels;
  if (!libopus_loaded(env) || !args(env, info, 3, argv) || !int_arg(env, argv[0], &slot) || !int_arg(env, argv[1], &rate) ||
      !int_arg(env, argv[2], &channels)) return NULL;
  napi_create_int32(env, slot_open(&inline_slots, slot, rate, channels), &result);
  return result;
}

/* closeInline(slot). */
static napi_value js_close_inline(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  int32_t slot;
  if (!args(env, info, 1, argv) || !int_arg(env, argv[0], &slot)) return NULL;
  if (opus_decode) slot_close(&inline_slots, slot);
  return NULL;
}

/* decodeInline(slot, packet, maxBytesPerChannel): a Buffer of PCM, or a status (a number). */
static napi_value js_decode_inline(napi_env env, napi_callback_info info) {
  napi_value argv[3], result;
  int32_t slot, max_per_channel, bytes = 0;
  void *packet = NULL;
  size_t length = 0;
  if (!libopus_loaded(env) || !args(env, info, 3, argv) || !int_arg(env, argv[0], &slot) ||
      !int_arg(env, argv[2], &max_per_channel)) return NULL;
  if (napi_get_buffer_info(env, argv[1], &packet, &length) != 0) {
    napi_throw_error(env, NULL, "opus-decode: the packet is not a Uint8Array");
    return NULL;
  }
  int32_t status = slot_decode(&inline_slots, slot, packet, length > INT32_MAX ? INT32_MAX : (int32_t)length,
                               max_per_channel, inline_pcm, &bytes);
  if (status != 1) {
    napi_create_int32(env, status, &result);
    return result;
  }
  if (napi_create_buffer_copy(env, (size_t)bytes, inline_pcm, NULL, &result) != 0) return NULL;
  return result;
}

/* createPool(threads, maxBytesPerChannel, deliver(thread, results, pcm)): a pool handle. */
static napi_value js_create_pool(napi_env env, napi_callback_info info) {
  napi_value argv[3], handle, name;
  int32_t threads, max_per_channel;
  if (!libopus_loaded(env) || !args(env, info, 3, argv) || !int_arg(env, argv[0], &threads) ||
      !int_arg(env, argv[1], &max_per_channel)) return NULL;
  if (threads < 1 || threads > 1024) {
    napi_throw_error(env, NULL, "opus-decode: a pool has 1 to 1024 threads");
    return NULL;
  }
  pool_t *p = calloc(1, sizeof *p);
  worker_t *workers = calloc((size_t)threads, sizeof *workers);
  if (!p || !workers) {
    free(p), free(workers);
    napi_throw_error(env, NULL, "opus-decode: out of memory");
    return NULL;
  }
  p->thread_count = threads;
  p->max_per_channel = max_per_channel;
  p->workers = workers;
  for (int32_t i = 0; i < threads; i++) {
    workers[i].pool = p;
    workers[i].index = i;
    if (uv_mutex_init(&workers[i].lock) != 0 || uv_cond_init(&workers[i].wake) != 0) {
      free(workers), free(p);
      napi_throw_error(env, NULL, "opus-decode: cannot make a lock");
      return NULL;
    }
  }
  napi_create_string_utf8(env, "voice-hub:opus-decode", SIZE_MAX, &name);
  if (napi_create_threadsafe_function(env, argv[2], NULL, name, 0, 1, NULL, NULL, p, deliver_answer, &p->deliver) != 0) {
    free(workers), free(p);
    napi_throw_error(env, NULL, "opus-decode: cannot create the delivery function");
    return NULL;
  }
  /* Idle threads must not keep a process alive: referenced only while jobs are out (setWaiting). */
  napi_unref_threadsafe_function(env, p->deliver);
  /* Added after the delivery function's own clean-up, so it runs before it (hooks run newest first). */
  napi_add_env_cleanup_hook(env, pool_cleanup, p);
  if (napi_create_external(env, p, NULL, NULL, &handle) != 0) return NULL;
  return handle;
}

static pool_t *pool_arg(napi_env env, napi_value v) {
  void *p = NULL;
  if (napi_get_value_external(env, v, &p) != 0 || !p) {
    napi_throw_error(env, NULL, "opus-decode: not a pool");
    return NULL;
  }
  return p;
}

/* submit(pool, thread, jobs: Int32Array, packets: Uint8Array): queues a batch on a thread (started on first use). */
static napi_value js_submit(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  int32_t thread;
  void *jobs = NULL, *packets = NULL;
  size_t job_bytes = 0, packet_bytes = 0;
  if (!args(env, info, 4, argv)) return NULL;
  pool_t *p = pool_arg(env, argv[0]);
  if (!p || !int_arg(env, argv[1], &thread)) return NULL;
  if (thread < 0 || thread >= p->thread_count || p->stopped) {
    napi_throw_error(env, NULL, p->stopped ? "opus-decode: the pool is stopped" : "opus-decode: no such thread");
    return NULL;
  }
  if (napi_get_buffer_info(env, argv[2], &jobs, &job_bytes) != 0 || napi_get_buffer_info(env, argv[3], &packets, &packet_bytes) != 0 ||
      job_bytes % (JOB_FIELDS * sizeof(int32_t)) != 0) {
    napi_throw_error(env, NULL, "opus-decode: submit(pool, thread, jobs, packets) takes typed arrays");
    return NULL;
  }
  batch_t *b = must(calloc(1, sizeof *b));
  b->jobs = must(malloc(job_bytes ? job_bytes : 1));
  b->packets = must(malloc(packet_bytes ? packet_bytes : 1));
  memcpy(b->jobs, jobs, job_bytes);
  memcpy(b->packets, packets, packet_bytes);
  b->job_count = job_bytes / (JOB_FIELDS * sizeof(int32_t));
  worker_t *w = &p->workers[thread];
  if (!w->started) {
    if (uv_thread_create(&w->thread, worker_main, w) != 0) {
      batch_free(b);
      napi_throw_error(env, NULL, "opus-decode: cannot start a decoder thread");
      return NULL;
    }
    w->started = true;
  }
  uv_mutex_lock(&w->lock);
  if (w->tail) w->tail->next = b;
  else w->head = b;
  w->tail = b;
  uv_cond_signal(&w->wake);
  uv_mutex_unlock(&w->lock);
  return NULL;
}

/* setWaiting(pool, waiting): whether the process waits for the pool's answers (jobs are out) or not. */
static napi_value js_set_waiting(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  bool waiting = false;
  if (!args(env, info, 2, argv)) return NULL;
  pool_t *p = pool_arg(env, argv[0]);
  if (!p || p->stopped || napi_get_value_bool(env, argv[1], &waiting) != 0) return NULL;
  if (waiting) napi_ref_threadsafe_function(env, p->deliver);
  else napi_unref_threadsafe_function(env, p->deliver);
  return NULL;
}

/* stopPool(pool): stops and joins the threads, dropping what they held. Idempotent. */
static napi_value js_stop_pool(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (!args(env, info, 1, argv)) return NULL;
  pool_t *p = pool_arg(env, argv[0]);
  if (p && !p->stopped) {
    napi_remove_env_cleanup_hook(env, pool_cleanup, p);
    pool_stop(p);
  }
  return NULL;
}

static bool export_function(napi_env env, napi_value exports, const char *name, napi_callback cb) {
  napi_value fn = NULL;
  return napi_create_function(env, name, SIZE_MAX, cb, NULL, &fn) == 0 && napi_set_named_property(env, exports, name, fn) == 0;
}

__attribute__((visibility("default"))) napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  if (!export_function(env, exports, "load", js_load) || !export_function(env, exports, "openInline", js_open_inline) ||
      !export_function(env, exports, "closeInline", js_close_inline) ||
      !export_function(env, exports, "decodeInline", js_decode_inline) ||
      !export_function(env, exports, "createPool", js_create_pool) || !export_function(env, exports, "submit", js_submit) ||
      !export_function(env, exports, "setWaiting", js_set_waiting) || !export_function(env, exports, "stopPool", js_stop_pool)) {
    return NULL;
  }
  return exports;
}
