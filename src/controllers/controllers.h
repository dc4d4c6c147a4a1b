/*
 * controllers: kapi's in-process controllers (DESIGN.md, "Shape"), each a thread that
 * makes a pass over what it looks after every interval, working through the api's own
 * verbs as kube-controller-manager would through the API.
 */
#ifndef KAPI_CONTROLLERS_H
#define KAPI_CONTROLLERS_H

#include "api/api.h"

typedef struct kapi_controller kapi_controller;

/* The namespace lifecycle: empties each namespace being deleted (every namespaced object
 * in it is deleted, finalizers honoured), then removes the "kubernetes" finalizer from
 * its spec.finalizers and deletes it. */
kapi_controller *kapi_namespace_controller_start(kapi_api *api);
/* CRD naming and establishing: a new CustomResourceDefinition gets its accepted names and
 * the NamesAccepted and Established conditions. */
kapi_controller *kapi_crd_controller_start(kapi_api *api);
/* Stops a controller and waits for its thread (NULL is a no-op). */
void kapi_controller_stop(kapi_controller *c);

/* For the controllers' own files: runs pass(api) every interval_ms on a new thread. */
kapi_controller *kapi_controllers__start(kapi_api *api, const char *name, int interval_ms,
                                         void (*pass)(kapi_api *api));

#endif
