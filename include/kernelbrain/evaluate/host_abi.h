/* The path host candidates include: "kernelbrain/evaluate/host_abi.h". It stays where it was when
 * the host backend moved to kernelbrain/backends/host/ because kernel sources (examples, catalogues,
 * recordings, model replies) name it, and a recorded source must keep its text and its hash. The
 * ABI itself: kernelbrain/backends/host/abi.h. */
#ifndef KERNELBRAIN_EVALUATE_HOST_ABI_H
#define KERNELBRAIN_EVALUATE_HOST_ABI_H
#include "kernelbrain/backends/host/abi.h"
#endif
