/*
 * What our addons use of the running node, declared here so that they build with a bare C compiler for
 * each target, native or cross: no Node, libuv or libc headers, and no glibc symbol versions that would
 * raise the package's libc6 dependency (glibc 2.34 moved pthread_create and dlopen to new versions).
 * Everything below resolves against the node binary, which exports Node-API and libuv.
 */
#ifndef VOICE_HUB_NODE_EXPORTS_H
#define VOICE_HUB_NODE_EXPORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern void *malloc(size_t size);
extern void free(void *ptr);

/*
 * libuv (uv.h). Its mutex and condition types are pthread's, whose size differs by arch (a mutex is 24
 * to 48 bytes, a condition 48): here they are opaque storage larger than any of them, only ever passed
 * by pointer. uv_thread_t is pthread_t, an unsigned long on Linux.
 */
typedef union {
  unsigned char bytes[128];
  long double align_;
  void *pointer_;
} uv_sync_t;
typedef uv_sync_t uv_mutex_t;
typedef uv_sync_t uv_cond_t;
typedef unsigned long uv_thread_t;
extern int uv_mutex_init(uv_mutex_t *mutex);
extern void uv_mutex_destroy(uv_mutex_t *mutex);
extern void uv_mutex_lock(uv_mutex_t *mutex);
extern void uv_mutex_unlock(uv_mutex_t *mutex);
extern int uv_cond_init(uv_cond_t *cond);
extern void uv_cond_destroy(uv_cond_t *cond);
extern void uv_cond_signal(uv_cond_t *cond);
extern void uv_cond_broadcast(uv_cond_t *cond);
extern void uv_cond_wait(uv_cond_t *cond, uv_mutex_t *mutex);
extern int uv_thread_create(uv_thread_t *tid, void (*entry)(void *arg), void *arg);
extern int uv_thread_join(uv_thread_t *tid);

/* Node-API (node_api.h): the types and the calls every addon of ours makes. */
typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status; /* an enum in node_api_types.h; napi_ok is 0 */
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);
extern napi_status napi_get_cb_info(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv,
                                    napi_value *this_arg, void **data);
extern napi_status napi_get_value_int32(napi_env env, napi_value value, int32_t *result);
extern napi_status napi_create_function(napi_env env, const char *name, size_t length, napi_callback cb, void *data,
                                        napi_value *result);
extern napi_status napi_set_named_property(napi_env env, napi_value object, const char *name, napi_value value);

#endif
