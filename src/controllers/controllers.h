/*
 * controllers: kapi's in-process controllers (DESIGN.md, "Shape"), each a thread that
 * works through the api's own verbs, as kube-controller-manager would through the API.
 */
#ifndef KAPI_CONTROLLERS_H
#define KAPI_CONTROLLERS_H

#include "api/api.h"

/* The namespace lifecycle controller: empties each namespace being deleted (every
 * namespaced object in it is deleted, finalizers honoured), then removes the "kubernetes"
 * finalizer from its spec.finalizers and deletes it. */
typedef struct kapi_namespace_controller kapi_namespace_controller;

kapi_namespace_controller *kapi_namespace_controller_start(kapi_api *api);
/* Stops the controller and waits for its thread. */
void kapi_namespace_controller_stop(kapi_namespace_controller *c);

#endif
