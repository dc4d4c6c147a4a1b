/*
 * controllers: kapi's in-process controllers (docs/DESIGN.md, "Controllers"). Each is a client of
 * the api, as kube-controller-manager is: it reads and writes only through the api's
 * client verbs (api.h), which run the pipeline a request runs, as its own user, so
 * admission, validation and (later) RBAC and audit see it: kube-controller-manager's
 * (kapi_controllers_user) for the namespace and serviceaccounts controllers,
 * kube-apiserver's loopback user for the CRD controller, which kube-apiserver runs itself.
 *
 * Each controller is one thread. It learns of changes from store watches of the types it
 * looks after (through kapi_api_watch_start) and makes a pass when one arrives; while a
 * pass leaves work waiting on others (a namespace's objects with finalizers, a CRD's
 * custom resources) it makes another after a short retry interval, and otherwise one
 * every slow resync interval, or sooner at a time the pass asked for (the CronJob
 * controller's next schedule time). Stopping does not wait for a pass to finish: a pass gives
 * up between two writes once its controller is stopping.
 */
#ifndef KAPI_CONTROLLERS_H
#define KAPI_CONTROLLERS_H

#include "api/api.h"

typedef struct kapi_controller kapi_controller;

/* The controllers' identity (kube-controller-manager's): system:kube-controller-manager,
 * in system:authenticated. */
extern const kapi_user kapi_controllers_user;

/* The namespace lifecycle: empties each namespace being deleted (every namespaced object
 * in it is deleted, finalizers honoured), then removes the "kubernetes" finalizer from
 * its spec.finalizers (a write to its /finalize), which removes it. */
kapi_controller *kapi_namespace_controller_start(kapi_api *api);
/* Creates the namespace name unless it exists (start-up: default, kube-system, ...), as
 * kube-apiserver's own loopback client. */
kapi_error *kapi_namespace_ensure(kapi_api *api, const char *name);
/* kube-controller-manager's serviceaccounts controller: every Active namespace has a
 * ServiceAccount named "default", created when it is missing (a new namespace, or the
 * account deleted). */
kapi_controller *kapi_serviceaccount_controller_start(kapi_api *api);
/* Reconciles the RBAC policy kube-apiserver bootstraps (roles, bindings, their
 * aggregation rules) with what is stored, as kube-apiserver does at every start
 * (rbac.c); before serving. */
kapi_error *kapi_rbac_bootstrap(kapi_api *api);
/* ClusterRole aggregation: a ClusterRole with an aggregationRule gets the rules of every
 * other ClusterRole its selectors pick (admin, edit and view are made so), as
 * kube-controller-manager's clusterrole-aggregation controller does (rbac.c). */
kapi_controller *kapi_rbac_aggregation_controller_start(kapi_api *api);
/* CRD naming and establishing: a new CustomResourceDefinition gets its accepted names and
 * the NamesAccepted and Established conditions (a /status write). A deleted one has its
 * custom resources deleted, then its cleanup finalizer removed. */
kapi_controller *kapi_crd_controller_start(kapi_api *api);
/* kube-controller-manager's cronjob controller (v2): each CronJob's Jobs created at its
 * schedule times in its spec.timeZone, concurrencyPolicy, startingDeadlineSeconds,
 * suspend, the history limits and status (cronjob.c). */
kapi_controller *kapi_cronjob_controller_start(kapi_api *api);
/* The controllers' clock, Unix milliseconds: the system's plus the offset below. */
int64_t kapi_controllers_now_ms(void);
/* The test hook (--controllers-clock-file): moves the controllers' clock to ms from the
 * system's and wakes every running controller, which makes a pass at once. */
void kapi_controllers_set_clock_offset(int64_t ms);
/* The garbage collector (kube-controller-manager's): the dependency graph of
 * metadata.ownerReferences across every stored type, built-in and custom, kept from
 * watches; dependents whose owners are gone are deleted, foregroundDeletion and orphan
 * finalizers are carried out and removed (gc.c). */
kapi_controller *kapi_gc_controller_start(kapi_api *api);
/* kube-controller-manager's multi-CIDR range allocator: each Node without Pod CIDRs gets
 * a block from a ClusterCIDR whose node selector picks it (clustercidr.c). With
 * default_spec (borrowed: see below; NULL: none), it makes the ClusterCIDR
 * "default-cluster-cidr" of that spec at its start when there is none of that name. */
kapi_controller *kapi_clustercidr_controller_start(kapi_api *api, const json_t *default_spec);
/* kube-controller-manager's --cluster-cidr (one CIDR, or an IPv4 and an IPv6 one, comma-
 * separated) and --node-cidr-mask-size, -ipv4, -ipv6 (0: not given) as the spec of the
 * default ClusterCIDR its allocator makes: NULL with *spec set (a new reference, NULL
 * when cidrs is empty), or why they are refused in kube-controller-manager's words (a
 * heap string). */
char *kapi_clustercidr_default_spec(const char *cidrs, int mask, int mask_v4, int mask_v6,
                                    json_t **spec);
/* Stops a controller and waits for its thread, which ends its pass at the next write
 * (NULL is a no-op). */
void kapi_controller_stop(kapi_controller *c);

/* ---- leader election (leader.c) ----
 *
 * The controllers run in one kapi instance at a time among those serving one cluster.
 * The instances elect it on a Lease, as client-go's leaderelection elects
 * kube-controller-manager: each candidate reads the lock Lease and takes it when it is
 * free, released (no holder) or expired, or renews it when it holds it, writing
 * holderIdentity, leaseDurationSeconds, acquireTime, renewTime (MicroTimes) and
 * leaseTransitions (one more each time the holder changes) through the api's client
 * verbs as system:kube-controller-manager. A write is made at the resourceVersion read,
 * so of two candidates racing for the lease one wins and the other, refused (409), is
 * simply not leader. A lease is expired when the record has not changed for the
 * candidate's own lease duration on its own monotonic clock (client-go's rule: no
 * comparison of clocks between instances).
 *
 * The first try is made at once (a free lease is taken without waiting); a candidate
 * retries every retry period plus up to 1.2 of it (client-go's jitter); the leader renews
 * every retry period and stops leading when no renewal succeeded for the renew deadline,
 * or at once when it finds another holder (client-go keeps trying until the deadline), so
 * that a leader that hung while another took over stops at its next try. The deadline is
 * checked between tries: a try blocked in the store is not cut short.
 * kube-controller-manager exits when it loses the lease; kapi instead stops its
 * controllers (the stopped callback) and goes back to campaigning. On stop, a leader
 * stops its controllers first and then, when release is set (client-go's
 * ReleaseOnCancel), writes the lease free (no holder, 1 s) so that another instance takes
 * over at once instead of after the lease duration.
 *
 * The elector is one thread; both callbacks run on it, started each time it begins
 * leading and stopped each time it ends (never without a started before it). */

typedef struct kapi_leader kapi_leader;

/* What an elector runs when it begins and ends leading: client-go's OnStartedLeading and
 * OnStoppedLeading. */
typedef struct kapi_leader_callbacks {
    void (*started)(void *ctx);
    void (*stopped)(void *ctx);
    void *ctx;
} kapi_leader_callbacks;

/* kube-controller-manager's defaults (--leader-elect-*). */
#define KAPI_LEADER_LEASE_MS 15000
#define KAPI_LEADER_RENEW_MS 10000
#define KAPI_LEADER_RETRY_MS 2000

/* An elector's settings; the strings are borrowed for kapi_leader_start. */
typedef struct kapi_leader_config {
    const char *ns, *name; /* the lock Lease; NULL: kube-system/kube-controller-manager */
    const char *identity;  /* holderIdentity; NULL: kapi_leader_default_identity(NULL) */
    /* lease duration, renew deadline, retry period; 0: the defaults above. The Lease's
     * leaseDurationSeconds is the lease duration in whole seconds, at least 1. */
    int lease_ms, renew_ms, retry_ms;
    bool release; /* write the lease free on stop (ReleaseOnCancel) */
    kapi_leader_callbacks cb;
} kapi_leader_config;

/* NULL when the durations of c can elect (client-go's NewLeaderElector rules: each
 * positive, lease duration > renew deadline > 1.2 retry periods), else why not. */
kapi_error *kapi_leader_config_check(const kapi_leader_config *c);
/* Starts campaigning on api's store as c says (c checked). The lease's namespace must
 * exist for a first try to succeed (kube-system is made at start). */
kapi_leader *kapi_leader_start(kapi_api *api, const kapi_leader_config *c);
/* kube-controller-manager's identity: "<hostname>_<uuid>", with a random UUID when uuid is
 * NULL. Returns a new string, the caller's. */
char *kapi_leader_default_identity(const char *uuid);
/* True while l leads (from any thread). */
bool kapi_leader_leading(const kapi_leader *l);
/* l's holderIdentity (borrowed, l's). */
const char *kapi_leader_identity(const kapi_leader *l);
/* Stops campaigning; a leader runs its stopped callback and, when configured, releases
 * the lease. Waits for the elector's thread and frees l (NULL is a no-op). */
void kapi_leader_stop(kapi_leader *l);

/* ---- for the controllers' own files (controllers/runner.c) ---- */

/* A controller's pass: true when it left work waiting (try again soon). */
typedef bool (*kapi_controller_pass)(kapi_controller *c);
/* The most types one controller watches. */
#define KAPI_CONTROLLER_MAX_WATCHED 4
/* Starts the controller name: its thread watches the objects of the types of watched
 * (NULL-terminated, at most KAPI_CONTROLLER_MAX_WATCHED) and runs pass once at start, once
 * after each change, every retry_ms while a pass leaves work waiting, and every
 * resync_ms otherwise. */
kapi_controller *kapi_controllers__start(kapi_api *api, const char *name,
                                         const kapi_type *const *watched, int retry_ms,
                                         int resync_ms, kapi_controller_pass pass);
/* kapi_controllers__start for a controller with state of its own: ctx, which its pass
 * reads through kapi_controllers__ctx, is freed by dispose (may be NULL) once the
 * controller's thread has ended. */
kapi_controller *kapi_controllers__start_with(kapi_api *api, const char *name,
                                              const kapi_type *const *watched, int retry_ms,
                                              int resync_ms, kapi_controller_pass pass, void *ctx,
                                              void (*dispose)(void *ctx));
/* The state given to kapi_controllers__start_with. */
void *kapi_controllers__ctx(const kapi_controller *c);
/* Marks c for a pass, as a change of a watched type does: from any thread, a store
 * watch's callback included. */
void kapi_controllers__wake(kapi_controller *c);
/* Whether a change of an object of type t calls for a pass (on the store's thread: quick,
 * no store calls). */
typedef bool (*kapi_controller_filter)(const kapi_type *t, const kapi_store_event *ev);
/* kapi_controllers__start_with, with only the changes filter lets through making a pass
 * (the resync and the retries are as before). */
kapi_controller *kapi_controllers__start_filtered(kapi_api *api, const char *name,
                                                  const kapi_type *const *watched, int retry_ms,
                                                  int resync_ms, kapi_controller_pass pass,
                                                  kapi_controller_filter filter, void *ctx,
                                                  void (*dispose)(void *ctx));
/* One change a controller's own store watch reported, queued for its pass. */
typedef struct kapi_controller_change {
    const kapi_type *type; /* a reference */
    kapi_store_event_type what;
    kapi_obj *obj; /* a reference; NULL for RESET */
} kapi_controller_change;
/* The most changes queued between two passes. One more drops every change queued: the
 * next take says so, and the controller reads again what they would have told it. */
#define KAPI_CONTROLLER_MAX_QUEUED 65536
/* From a store watch's callback (any thread): queues ev, a change of an object of type t,
 * for c's next pass and wakes c. A PROGRESS is not queued. */
void kapi_controllers__queue(kapi_controller *c, const kapi_type *t, const kapi_store_event *ev);
/* From a pass: the changes queued since the last take, oldest first, *n of them (NULL when
 * none). *lost is true when changes were dropped before the first of them (the queue was
 * full): the controller lists again what it watches, as after a RESET, then applies the
 * changes returned. Freed with kapi_controllers__changes_free. */
kapi_controller_change *kapi_controllers__take(kapi_controller *c, size_t *n, bool *lost);
/* Drops the references of the n changes and frees them. */
void kapi_controllers__changes_free(kapi_controller_change *changes, size_t n);
/* The api a controller works through. */
kapi_api *kapi_controllers__api(const kapi_controller *c);
/* A string member of obj at path by length (a name may hold a NUL); empty when none. */
kapi_str kapi_controllers__str(const json_t *obj, const char *path);
/* The type the custom resources of crd (as read, at its resourceVersion) are stored as,
 * a reference (kapi_type_unref): the registry's custom type cache. */
kapi_error *kapi_controllers__storage_type(kapi_api *api, const json_t *crd, const kapi_type **out);
/* From a pass: make the next pass no later than at_ms on the controllers' clock (the
 * earliest asked for in a pass counts; a change or a moved clock still comes first). */
void kapi_controllers__wake_at(kapi_controller *c, int64_t at_ms);
/* Records a core/v1 Event about obj (of api_version and kind) as client-go's recorder
 * does: named "<name>.<hex nanoseconds>", in obj's namespace ("default" for a
 * cluster-scoped one), its involvedObject obj's reference, from component. */
void kapi_controllers__event(kapi_api *api, const json_t *obj, const char *api_version,
                             const char *kind, const char *component, const char *type,
                             const char *reason, const char *message);
/* True once the controller is being stopped: a pass gives up. */
bool kapi_controllers__stopping(kapi_controller *c);
/* How a ClusterCIDR's nodeSelector sel picks node (clustercidr.c): -1 when it does not, 0
 * for a selector without terms (it picks every Node), else the requirement count of the
 * most specific term that picks it (terms ORed, a term's requirements ANDed, a term with
 * none picks nothing). */
int kapi_controllers__node_selector_match(const json_t *sel, const json_t *node);

#endif
