/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api.c - the clients' control socket (falcon/api.h) and their rings (falcon/queue.h).
 *
 * Each client is one SOCK_SEQPACKET connection with its own object table: a handle is
 * slot | generation << 16 in that table, so a client can name only its own PDs, MRs,
 * CQs, listeners and QPs, and a stale handle fails (-ENOENT). Objects point at engine
 * objects (PD, MR, CQ, QP numbers) and at the memory the daemon maps for them:
 *
 *   MR   the client's sealed memfd, mapped here; the engine places and gathers in it
 *   CQ   a ring memfd the daemon creates, seals and passes; the engine writes CQEs
 *   QP   a memfd with its send and receive rings; the engine reads WRs from them
 *
 * The data path does not touch the socket. Before the loop sleeps (fd_api_prepare) the
 * daemon takes what every ring holds, and wakes clients that armed a CQ that now has
 * completions. A client posting into a ring rings its doorbell (an eventfd) only when the
 * ring's need_wakeup says the daemon sleeps.
 *
 * Asynchronous events go to the client on its event socket (api.h): the engine's events
 * carry the client's id and the object's handle as their cookie, are drained before the
 * loop sleeps, and become pending bits on the objects, sent from there without ever
 * blocking the daemon (a full socket waits for room with an EV_WRITE watcher).
 *
 * A client that disconnects or dies releases everything: its QPs are destroyed (peers are
 * told), then CQs, MRs (unmapped: its memory is never touched again), PDs, listeners.
 * Messages that break the protocol are answered with an error or, when the header itself
 * is broken, end the client's session; other clients are not affected.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "falcon/api.h"
#include "falcon/falcon.h"
#include "falcon/queue.h"
#include "falcond.h"
#include "log.h"

/* A handle is slot | generation << OBJ_SLOT_BITS in the client's table, which grows by
 * chunks up to its quota (--client-max-objects <= FD_CLIENT_OBJS_MAX slots): memory by
 * use, and an object never moves (the CM's callbacks hold pointers to them). */
#define OBJ_SLOT_BITS 18u
#define OBJ_SLOT_MASK ((1u << OBJ_SLOT_BITS) - 1u)
#define OBJ_GEN_MASK ((1u << (32u - OBJ_SLOT_BITS)) - 1u)
#define OBJ_CHUNK 256u
#define OBJ_NONE UINT32_MAX
_Static_assert(FD_CLIENT_OBJS_MAX == 1u << OBJ_SLOT_BITS, "handle slot bits");
#define REFUSE_LOG_NS 1000000000ull /* refusals of a limit: one log line a second */
#define ARENA_CLASSES 11u     /* arena blocks of 1 .. 1024 units (1 KiB .. 1 MiB) */
#define RING_ALIGN 64u        /* a QP's receive ring follows its send ring at this */
#define RING_ENTRIES_MAX 4096u  /* send / receive rings */
#define CQ_ENTRIES_MAX 65536u   /* completion rings */
#define INFLIGHT_MAX 65536u     /* transactions in flight per QP (fc_rdma_qp_init's bound) */
#define MR_BYTES_MAX (1ull << 40) /* one registration */
#define PAGE 4096ull

_Static_assert((int)FALCON_WR_SEND == FC_RDMA_WR_SEND &&
	       (int)FALCON_WR_MASKED_ATOMIC_FETCH_AND_ADD == FC_RDMA_WR_MASKED_FETCH_ADD,
	       "public opcodes are the engine's");
_Static_assert((int)FALCON_ACCESS_REMOTE_INVALIDATE == FC_MR_REMOTE_INVALIDATE &&
	       (int)FALCON_ACCESS_REMOTE_ATOMIC == FC_MR_REMOTE_ATOMIC, "access bits");
_Static_assert((int)FALCON_WC_GENERAL_ERR == FC_WC_GENERAL_ERR, "wc status");
_Static_assert((int)FALCON_ORDER_WEAK == FC_RDMA_ORDER_WEAK, "ordering");

/* in the order a dying client's objects are released, last first */
enum obj_type {
	OBJ_FREE = 0, OBJ_PD, OBJ_MR, OBJ_CQ, OBJ_XRCD, OBJ_SRQ, OBJ_LISTENER, OBJ_AH, OBJ_QP,
	OBJ_TYPES
};
static const char *const obj_name[] = { "free", "pd", "mr", "cq", "xrcd", "srq", "listener",
					"ah", "qp" };

/* QP_CONNECTING: a CONNECT / ACCEPT waits (the CM creates the engine QP); QP_READY: the
 * engine QP exists (a QP of CREATE_QP from the start). */
enum qp_state { QP_CONNECTING = 1, QP_READY, QP_BROKEN };

struct client;

struct obj {
	uint8_t type;
	uint8_t refs_broken;    /* SRQ: its ring broke (logged once) */
	uint16_t gen;           /* OBJ_GEN_MASK bits */
	uint32_t refs;          /* PD: MRs + QPs + SRQs; CQ, SRQ: QPs */
	uint32_t slot;          /* its index in the client's table */
	uint8_t swept;          /* on its client's sweep list */
	struct client *c;
	struct obj *snext, *sprev; /* the sweep list (fd_api_prepare) */
	union {
		uint32_t free_next; /* OBJ_FREE: the next free slot */
		struct { uint32_t pd; } pd;
		struct {
			uint32_t pd_h, lkey;
			struct fc_mr_keys k;
			void *map;
			size_t map_len;
			uint64_t iova, len;
			uint32_t access;
		} mr;
		struct {
			uint32_t cqn, entries;
			void *ring;
			size_t bytes;
			int evfd;
			uint8_t ev;     /* async events not sent yet (EVB_*) */
			uint64_t notified;
		} cq;
		struct { uint16_t service; } lst;
		struct {
			uint32_t srqn, pd_h, xrcd_h, cq_h;
			void *ring;
			size_t bytes;
		} srq;
		struct { uint32_t num; } xrcd;   /* the daemon-wide XRC domain number */
		struct {
			int64_t cm_id;
			uint32_t ahn, pd_h, seq;
			uint8_t ready;
			uint16_t req_type; /* CREATE_AH or CREATE_AH_SRC, for the reply */
		} ah;
		struct {
			int64_t cm_id;  /* the CM's record: connection (or binding) */
			uint32_t qpn, rqpn, pd_h, scq_h, rcq_h, srq_h, xrcd_h;
			uint8_t state;
			uint8_t type;   /* enum fc_rdma_qp_type */
			uint8_t order;  /* enum fc_rdma_order */
			uint8_t by_api; /* CREATE_QP: the client moves it through its states */
			uint8_t want_rts, connected;
			/* verbs' timers as the client gave them (QUERY_QP) */
			uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
			uint8_t ev;     /* async events not sent yet (EVB_*) */
			void *rings;
			size_t bytes, rq_off;
			int rings_fd;
			uint32_t arena_unit; /* rings in the client's arena from this unit (0:
					      * a memfd of their own) */
			uint8_t arena_class; /* the block: 2^arena_class units */
			uint32_t seq;   /* the CONNECT / ACCEPT waiting for its reply */
			uint16_t req_type;
		} qp;
	} u;
};

struct client {
	struct client *next;
	struct fd_api *a;
	int fd, db_fd;
	ev_io w, db_w;
	int ev_fd;              /* our end of its event socket (api.h) */
	ev_io ev_w;             /* active while that socket is full */
	uint8_t ev_pending;     /* some object has an event to send */
	pid_t pid;
	int pidfd;              /* the process (pidfd_open), -1 if the kernel has none */
	uid_t uid;
	uint32_t id;
	int hello;
	uint32_t hiwat;         /* slots used so far: loops stop here */
	uint32_t free_head;     /* released slots below hiwat (OBJ_NONE: none) */
	uint32_t nobj[OBJ_TYPES]; /* objects held, by type (OBJ_FREE: all) */
	struct obj **chunk;     /* OBJ_CHUNK objects each, allocated as hiwat reaches them */
	/* Objects fd_api_prepare looks into each time round: CQs, SRQs, QPs with rings of
	 * their own, and QPs in the arena whose rings still hold WRs (or that are not ready
	 * for them yet). The arena's other QPs are looked into when their doorbell bit says
	 * so: the work of a round is bounded by what has work, not by what exists. */
	struct obj *sweep;
	/* the arena (falcon/queue.h), FC_API_HELLO_ARENA */
	void *arena;
	uint32_t *arena_slot;   /* unit -> slot + 1 of the QP whose rings start there */
	uint32_t arena_next;    /* units handed out so far */
	struct {
		uint32_t *unit, n, cap;
	} arena_free[ARENA_CLASSES]; /* freed blocks of 2^k units */
	uint32_t pending;       /* CONNECT / ACCEPT waiting */
	uint64_t msgs, errors;
};

struct fd_api {
	struct fd_daemon *d;
	int fd;
	ev_io w;
	struct client *clients;
	uint32_t nclients, next_id;
	uint32_t next_xrcd;
	uint32_t nobj[OBJ_TYPES];   /* objects of all clients, by type */
	struct {
		uint64_t last_ns;   /* the last refusal of this limit logged */
		uint32_t quiet;     /* refusals not logged since */
	} refuse[OBJ_TYPES][2];     /* [type][0: the daemon's limit, 1: a client's quota] */
	struct {
		uint64_t accepted, refused_full, disconnects, msgs, proto_errors, bad_requests;
		uint64_t ring_broken, cq_wakeups, doorbells, mr_by_copy, bind_failed;
		uint64_t ring_wrs;  /* WRs taken from the clients' rings */
		uint64_t arena_doorbells; /* QPs looked into because their arena bit said so */
		uint64_t arena_stray_doorbells; /* arena doorbell bits that named no QP */
		uint64_t events, events_lost; /* async events sent; lost: event socket broken */
	} st;
};

/* ---- helpers ---- */

static struct obj *obj_at(const struct client *c, uint32_t i)
{
	return &c->chunk[i / OBJ_CHUNK][i % OBJ_CHUNK];
}

static uint32_t obj_handle(const struct obj *o)
{
	return o->slot | (uint32_t)o->gen << OBJ_SLOT_BITS;
}

static struct obj *obj_get(struct client *c, uint32_t h, uint8_t type)
{
	uint32_t i = h & OBJ_SLOT_MASK;
	struct obj *o;

	if (i >= c->hiwat || (o = obj_at(c, i))->type != type || o->gen != (h >> OBJ_SLOT_BITS))
		return NULL;
	return o;
}

static void sweep_add(struct obj *o)
{
	struct client *c = o->c;

	if (o->swept)
		return;
	o->sprev = NULL;
	o->snext = c->sweep;
	if (c->sweep)
		c->sweep->sprev = o;
	c->sweep = o;
	o->swept = 1;
}

static void sweep_del(struct obj *o)
{
	if (!o->swept)
		return;
	if (o->sprev)
		o->sprev->snext = o->snext;
	else
		o->c->sweep = o->snext;
	if (o->snext)
		o->snext->sprev = o->sprev;
	o->snext = o->sprev = NULL;
	o->swept = 0;
}

/* ---- the arena: blocks of 2^k units for QP rings ---- */

static uint8_t arena_class_of(size_t bytes)
{
	uint8_t k = 0;

	while (((size_t)FC_ARENA_UNIT << k) < bytes)
		k++;
	return k;
}

/* A block for bytes of rings: its first unit, or 0 (none: too large, the arena is used
 * up, no memory; the QP gets a memfd of its own). A freed block of the size first, else
 * the next one aligned to its size. */
static uint32_t arena_alloc(struct client *c, size_t bytes, uint8_t *cls)
{
	uint8_t k = arena_class_of(bytes);
	uint32_t n = 1u << k, u;

	if (!c->arena || k >= ARENA_CLASSES)
		return 0;
	if (c->arena_free[k].n) {
		u = c->arena_free[k].unit[--c->arena_free[k].n];
	} else {
		u = (c->arena_next + n - 1) & ~(n - 1);
		if (u + n > FC_ARENA_BITS)
			return 0;
		c->arena_next = u + n;
	}
	*cls = k;
	return u;
}

/* Give a block back: on its class's free list (a list that cannot grow keeps the block
 * out of use, which costs address space only), its pages back to the system when it has
 * whole ones (the client's mapping reads zeros there until it is handed out again). */
static void arena_release(struct client *c, uint32_t u, uint8_t k)
{
	size_t bytes = (size_t)FC_ARENA_UNIT << k;
	uint8_t *p = (uint8_t *)c->arena + (size_t)u * FC_ARENA_UNIT;

	c->arena_slot[u] = 0;
	if (bytes >= PAGE)
		madvise(p, bytes, MADV_REMOVE);
	if (c->arena_free[k].n == c->arena_free[k].cap) {
		uint32_t cap = c->arena_free[k].cap ? 2 * c->arena_free[k].cap : 64;
		uint32_t *v = realloc(c->arena_free[k].unit, cap * sizeof(*v));

		if (!v)
			return;
		c->arena_free[k].unit = v;
		c->arena_free[k].cap = cap;
	}
	c->arena_free[k].unit[c->arena_free[k].n++] = u;
}

/* The arena of a client that asked for one: the memfd to send (the caller closes it), or
 * -errno (the client then has none). */
static int arena_open(struct client *c)
{
	void *map = MAP_FAILED;
	int fd = memfd_create("falcon-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)FC_ARENA_BYTES) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
	    (map = mmap(NULL, FC_ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
			fd, 0)) == MAP_FAILED ||
	    !(c->arena_slot = calloc(FC_ARENA_BITS, sizeof(*c->arena_slot)))) {
		int e = -errno;

		if (map != MAP_FAILED)
			munmap(map, FC_ARENA_BYTES);
		close(fd);
		return e;
	}
	fc_arena_init(map);
	c->arena = map;
	c->arena_next = FC_ARENA_RINGS_OFF / FC_ARENA_UNIT;
	return fd;
}

static void arena_close(struct client *c)
{
	if (c->arena)
		munmap(c->arena, FC_ARENA_BYTES);
	free(c->arena_slot);
	for (uint32_t k = 0; k < ARENA_CLASSES; k++)
		free(c->arena_free[k].unit);
	c->arena = NULL;
}

/* What each kind of object is bounded by: the daemon's table, and one client's share of
 * it (0: only its objects quota). */
static void obj_limits(const struct fd_cfg *cfg, uint8_t type, uint32_t *max, const char **opt,
		       uint32_t *cmax, const char **copt)
{
	*cmax = 0;
	*copt = NULL;
	switch (type) {
	case OBJ_QP:
		*max = cfg->max_qps, *opt = "--max-qps";
		*cmax = cfg->client_max_qps, *copt = "--client-max-qps";
		return;
	case OBJ_MR:
		*max = cfg->max_mrs, *opt = "--max-mrs";
		*cmax = cfg->client_max_mrs, *copt = "--client-max-mrs";
		return;
	case OBJ_CQ: *max = cfg->max_cqs, *opt = "--max-cqs"; return;
	case OBJ_SRQ: *max = cfg->max_srqs, *opt = "--max-srqs"; return;
	case OBJ_AH: *max = cfg->max_ahs, *opt = "--max-ahs"; return;
	case OBJ_PD: *max = cfg->max_pds, *opt = "--max-pds"; return;
	default: *max = UINT32_MAX, *opt = NULL; return;
	}
}

/* A refusal for a limit: logged naming it, at most one line per REFUSE_LOG_NS for each
 * limit (with the number of its refusals not logged meanwhile). whose: "the daemon" or
 * "the client ...". */
static void refuse_log(struct client *c, uint8_t type, int quota, const char *whose, uint32_t n,
		       const char *opt)
{
	struct fd_api *a = c->a;
	uint64_t now = fd_now_ns();
	uint64_t *last = &a->refuse[type][quota].last_ns;
	uint32_t *quiet = &a->refuse[type][quota].quiet;

	if (*last && now - *last < REFUSE_LOG_NS) {
		(*quiet)++;
		return;
	}
	LOG_W("api: client %u (pid %d): a %s refused: %s holds %u, its limit (%s %u); %u more "
	      "refused since the last such line", c->id, (int)c->pid, obj_name[type], whose, n,
	      opt, n, *quiet);
	*last = now;
	*quiet = 0;
}

/* May c have one more object of type? 0, -ENOSPC (the daemon's table for it is full),
 * -EDQUOT (c's own share: objects, or of that type). */
static int obj_quota(struct client *c, uint8_t type)
{
	const struct fd_cfg *cfg = &c->a->d->cfg;
	uint32_t max, cmax;
	const char *opt, *copt;

	obj_limits(cfg, type, &max, &opt, &cmax, &copt);
	if (opt && c->a->nobj[type] >= max) {
		refuse_log(c, type, 0, "the daemon", c->a->nobj[type], opt);
		return -ENOSPC;
	}
	if (copt && cmax && c->nobj[type] >= cmax) {
		refuse_log(c, type, 1, "the client", c->nobj[type], copt);
		return -EDQUOT;
	}
	if (c->nobj[OBJ_FREE] >= cfg->client_max_objects) {
		refuse_log(c, OBJ_FREE, 1, "the client (objects of all kinds)",
			   c->nobj[OBJ_FREE], "--client-max-objects");
		return -EDQUOT;
	}
	return 0;
}

/* A new object of type, its handle in *h. NULL with *err: -ENOSPC, -EDQUOT (obj_quota),
 * -ENOMEM. O(1): a released slot, else the next one. */
static struct obj *obj_new(struct client *c, uint8_t type, uint32_t *h, int *err)
{
	uint32_t i;
	struct obj *o;
	uint16_t gen;

	if ((*err = obj_quota(c, type)))
		return NULL;
	if (c->free_head != OBJ_NONE) {
		i = c->free_head;
		c->free_head = obj_at(c, i)->u.free_next;
	} else {
		if (c->hiwat >= c->a->d->cfg.client_max_objects) { /* obj_quota's bound */
			*err = -EDQUOT;
			return NULL;
		}
		if (!c->chunk[c->hiwat / OBJ_CHUNK] &&
		    !(c->chunk[c->hiwat / OBJ_CHUNK] = calloc(OBJ_CHUNK, sizeof(struct obj)))) {
			*err = -ENOMEM;
			return NULL;
		}
		i = c->hiwat++;
	}
	o = obj_at(c, i);
	gen = (uint16_t)((o->gen + 1) & OBJ_GEN_MASK);
	memset(o, 0, sizeof(*o));
	o->type = type;
	o->gen = gen ? gen : 1;
	o->slot = i;
	o->c = c;
	c->nobj[type]++;
	c->nobj[OBJ_FREE]++;
	c->a->nobj[type]++;
	*h = obj_handle(o);
	return o;
}

static void obj_put(struct obj *o)
{
	struct client *c = o->c;
	uint16_t gen = o->gen;
	uint32_t slot = o->slot;

	if (o->type != OBJ_FREE) {
		c->nobj[o->type]--;
		c->nobj[OBJ_FREE]--;
		c->a->nobj[o->type]--;
	}
	sweep_del(o);
	memset(o, 0, sizeof(*o));
	o->gen = gen;
	o->slot = slot;
	o->c = c;
	o->u.free_next = c->free_head;
	c->free_head = slot;
}

static int reply(struct client *c, const struct fc_api_hdr *req, int status, const void *body,
		 uint32_t len, const int *fds, unsigned nfds)
{
	uint8_t buf[FC_API_MSG_MAX];
	struct fc_api_hdr *h = (struct fc_api_hdr *)buf;

	*h = (struct fc_api_hdr){ .hdr_size = sizeof(*h), .version = FC_API_VERSION,
				  .type = req->type, .len = sizeof(*h) + len, .seq = req->seq,
				  .status = status };
	if (len)
		memcpy(buf + sizeof(*h), body, len);
	if (status)
		c->errors++;
	/* a client that does not read its replies loses them: never block the daemon */
	return fc_api_send(c->fd, buf, sizeof(*h) + len, fds, nfds, MSG_DONTWAIT);
}

/* An error reply with the CM's sentence on it (api.h, FC_API_WHY_MAX): why the peer
 * refused, or what did not answer. */
static int reply_why(struct client *c, const struct fc_api_hdr *req, int status)
{
	const char *why = fd_cm_why(c->a->d->cm);
	size_t n = strnlen(why, FC_API_WHY_MAX - 1);
	char body[FC_API_WHY_MAX];

	if (!n)
		return reply(c, req, status, NULL, 0, NULL, 0);
	memcpy(body, why, n);
	body[n] = 0;
	return reply(c, req, status, body, (uint32_t)n + 1, NULL, 0);
}

/* A memfd of bytes, mapped here, sealed so that the client can neither shrink nor grow
 * it (a shrunk mapping would fault in the daemon). */
static int shared_mem(const char *name, size_t bytes, void **map)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)bytes) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	*map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*map == MAP_FAILED)
		goto fail;
	return fd;
fail: {
	int e = -errno;

	close(fd);
	return e;
}
}

static int pow2_ok(uint32_t n, uint32_t max)
{
	return n && n <= max && !(n & (n - 1));
}

/* ---- objects ---- */

static void mr_release(struct fd_api *a, struct obj *o)
{
	struct obj *pd = obj_get(o->c, o->u.mr.pd_h, OBJ_PD);

	if (pd) {
		fc_mr_dereg(fc_node_mrs(a->d->node), pd->u.pd.pd, o->u.mr.k.lkey);
		pd->refs--;
	}
	if (o->u.mr.map) /* NULL: the client's own memory, reached by copy */
		munmap(o->u.mr.map, o->u.mr.map_len);
	obj_put(o);
}

static void cq_release(struct fd_api *a, struct obj *o)
{
	fc_rdma_cq_destroy(fc_node_rdma(a->d->node), o->u.cq.cqn);
	munmap(o->u.cq.ring, o->u.cq.bytes);
	close(o->u.cq.evfd);
	obj_put(o);
}

static void srq_release(struct fd_api *a, struct obj *o)
{
	struct obj *pd = obj_get(o->c, o->u.srq.pd_h, OBJ_PD);

	struct obj *x;

	fc_rdma_srq_destroy(fc_node_rdma(a->d->node), o->u.srq.srqn); /* QPs went first */
	if (pd)
		pd->refs--;
	if (o->u.srq.xrcd_h && (x = obj_get(o->c, o->u.srq.xrcd_h, OBJ_XRCD)))
		x->refs--;
	if (o->u.srq.cq_h && (x = obj_get(o->c, o->u.srq.cq_h, OBJ_CQ)))
		x->refs--;
	munmap(o->u.srq.ring, o->u.srq.bytes);
	obj_put(o);
}

static void qp_release(struct fd_api *a, struct obj *o)
{
	struct client *c = o->c;
	struct obj *x;

	if (o->u.qp.by_api) /* ours: gone before its connection closes */
		fc_rdma_qp_destroy(fc_node_rdma(a->d->node), o->u.qp.qpn);
	if (o->u.qp.cm_id > 0) /* a CM QP is destroyed there first: no ring use after */
		fd_cm_close(a->d->cm, o->u.qp.cm_id);
	if (o->u.qp.state == QP_CONNECTING && c->pending)
		c->pending--;
	if (o->u.qp.arena_unit)
		arena_release(c, o->u.qp.arena_unit, o->u.qp.arena_class);
	else if (o->u.qp.rings)
		munmap(o->u.qp.rings, o->u.qp.bytes);
	if (o->u.qp.rings_fd >= 0)
		close(o->u.qp.rings_fd);
	if ((x = obj_get(c, o->u.qp.pd_h, OBJ_PD)))
		x->refs--;
	if ((x = obj_get(c, o->u.qp.scq_h, OBJ_CQ)))
		x->refs--;
	if ((x = obj_get(c, o->u.qp.rcq_h, OBJ_CQ)))
		x->refs--;
	if (o->u.qp.srq_h && (x = obj_get(c, o->u.qp.srq_h, OBJ_SRQ)))
		x->refs--;
	if (o->u.qp.xrcd_h && (x = obj_get(c, o->u.qp.xrcd_h, OBJ_XRCD)))
		x->refs--;
	obj_put(o);
}

static void ah_release(struct fd_api *a, struct obj *o)
{
	struct obj *pd = obj_get(o->c, o->u.ah.pd_h, OBJ_PD);

	if (o->u.ah.ready)
		fc_rdma_ah_destroy(fc_node_rdma(a->d->node), o->u.ah.ahn);
	else if (o->c->pending)
		o->c->pending--;
	if (o->u.ah.cm_id > 0) /* its work requests still in flight finish first (cm.c) */
		fd_cm_close(a->d->cm, o->u.ah.cm_id);
	if (pd)
		pd->refs--;
	obj_put(o);
}

/* ---- asynchronous events (api.h, "event socket") ---- */

/* Pending bits: a CQ's (u.cq.ev), a QP's (u.qp.ev), in the order they are sent. */
enum { EVB_CQ_ERR = 1, EVB_QP_FATAL = 1, EVB_QP_LAST_WQE = 2 };

/* The engine's cookie of c's object of handle h (fc_rdma_qp_init.user,
 * fc_rdma_cq_set_user): never 0 (generations start at 1). */
static uint64_t obj_cookie(const struct client *c, uint32_t h)
{
	return (uint64_t)c->id << 32 | h;
}

static uint8_t *obj_ev(struct obj *o)
{
	return o->type == OBJ_CQ ? &o->u.cq.ev : &o->u.qp.ev;
}

static void obj_event(struct obj *o, uint8_t bit)
{
	*obj_ev(o) |= bit;
	o->c->ev_pending = 1;
}

/* The event of bit on o, as the client reads it. */
static struct fc_api_event event_msg(struct obj *o, uint8_t bit)
{
	struct fc_api_event e = { .handle = obj_handle(o) };

	if (o->type == OBJ_CQ) {
		e.type = FALCON_EVENT_CQ_ERR;
		e.num = o->u.cq.cqn;
	} else {
		e.type = bit == EVB_QP_FATAL ? FALCON_EVENT_QP_FATAL :
					       FALCON_EVENT_QP_LAST_WQE_REACHED;
		e.num = o->u.qp.qpn;
	}
	return e;
}

/* One message of c's pending events, CQs' first (a QP's error follows its CQ's); the bits
 * sent are cleared. Returns the number sent (0: none pending), -EAGAIN (the socket is
 * full: nothing sent) or another -errno (the client's end is broken: they are dropped). */
static int events_send_one(struct client *c)
{
	struct {
		struct fc_api_hdr h;
		struct fc_api_event e[FC_API_EVENTS_MAX];
	} m;
	struct obj *took[FC_API_EVENTS_MAX];
	uint8_t bit[FC_API_EVENTS_MAX];
	uint32_t k = 0;
	int rc;

	static const uint8_t order[] = { OBJ_CQ, OBJ_QP };

	for (uint32_t t = 0; t < sizeof(order) && k < FC_API_EVENTS_MAX; t++)
		for (uint32_t i = 0; i < c->hiwat && k < FC_API_EVENTS_MAX; i++) {
			struct obj *o = obj_at(c, i);

			for (uint8_t b = 1; o->type == order[t] && b <= EVB_QP_LAST_WQE &&
					    k < FC_API_EVENTS_MAX; b <<= 1)
				if (*obj_ev(o) & b) {
					m.e[k] = event_msg(o, b);
					took[k] = o;
					bit[k++] = b;
				}
		}
	if (!k)
		return 0;
	m.h = (struct fc_api_hdr){ .hdr_size = sizeof(m.h), .version = FC_API_VERSION,
				   .type = FC_API_EVENT,
				   .len = (uint32_t)(sizeof(m.h) + k * sizeof(m.e[0])) };
	rc = fc_api_send(c->ev_fd, &m, m.h.len, NULL, 0, MSG_DONTWAIT);
	if (rc == -EAGAIN || rc == -EWOULDBLOCK)
		return -EAGAIN;
	for (uint32_t i = 0; i < k; i++)
		*obj_ev(took[i]) &= (uint8_t)~bit[i];
	return rc ? rc : (int)k;
}

/* Send c's pending events while its socket takes them; when it is full, wait for room
 * (ev_w). Bounded: each message clears at least one bit of a bounded table. */
static void events_flush(struct fd_api *a, struct client *c)
{
	int rc;

	while ((rc = events_send_one(c)) > 0)
		a->st.events += (uint64_t)rc;
	if (rc == -EAGAIN) {
		ev_io_start(a->d->loop, &c->ev_w);
		return;
	}
	if (rc < 0) { /* the client's end is gone: so is the client, soon */
		a->st.events_lost++;
		for (uint32_t i = 0; i < c->hiwat; i++)
			if (obj_at(c, i)->type == OBJ_CQ || obj_at(c, i)->type == OBJ_QP)
				*obj_ev(obj_at(c, i)) = 0;
	}
	c->ev_pending = 0;
	ev_io_stop(a->d->loop, &c->ev_w);
}

static void ev_writable_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct client *c = w->data;

	(void)loop;
	(void)revents;
	events_flush(c->a, c);
}

static struct client *client_by_id(struct fd_api *a, uint32_t id)
{
	for (struct client *c = a->clients; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

/* The engine's async events (bounded by its queue, cfg async_depth) onto the objects
 * they name, then to the clients. An object that is gone (a stale generation, another
 * engine number) takes none; CONN_DEAD is the CM's business (loop.c). A QP of CONNECT /
 * ACCEPT has its engine number only once connected: its events count before that. */
static void events_from_engine(struct fd_api *a)
{
	struct fc_rdma *d = fc_node_rdma(a->d->node);
	struct fc_rdma_async_event ev;

	while (!fc_rdma_get_async_event(d, &ev)) {
		struct client *c = ev.user ? client_by_id(a, (uint32_t)(ev.user >> 32)) : NULL;
		uint32_t h = (uint32_t)ev.user;
		struct obj *o;

		if (!c)
			continue;
		if (ev.type == FC_RDMA_EV_CQ_ERR) {
			if ((o = obj_get(c, h, OBJ_CQ)) && o->u.cq.cqn == ev.num)
				obj_event(o, EVB_CQ_ERR);
		} else if (ev.type == FC_RDMA_EV_QP_FATAL || ev.type == FC_RDMA_EV_QP_LAST_WQE) {
			if ((o = obj_get(c, h, OBJ_QP)) &&
			    (o->u.qp.qpn == ev.num || o->u.qp.state == QP_CONNECTING))
				obj_event(o, ev.type == FC_RDMA_EV_QP_FATAL ? EVB_QP_FATAL :
									       EVB_QP_LAST_WQE);
		}
	}
	for (struct client *c = a->clients; c; c = c->next)
		if (c->ev_pending && !ev_is_active(&c->ev_w))
			events_flush(a, c);
}

static void client_free(struct fd_api *a, struct client *c, const char *why)
{
	struct fd_daemon *d = a->d;
	uint32_t n[OBJ_TYPES] = { 0 };

	/* QPs first (nothing reads rings or memory after), then what they used */
	for (uint8_t t = OBJ_QP; t >= OBJ_PD; t--)
		for (uint32_t i = 0; i < c->hiwat; i++) {
			struct obj *o = obj_at(c, i);

			if (o->type != t)
				continue;
			n[t]++;
			switch (t) {
			case OBJ_QP: qp_release(a, o); break;
			case OBJ_AH: ah_release(a, o); break;
			case OBJ_LISTENER: fd_cm_unlisten(d->cm, o->u.lst.service); obj_put(o); break;
			case OBJ_XRCD: obj_put(o); break;
			case OBJ_SRQ: srq_release(a, o); break;
			case OBJ_CQ: cq_release(a, o); break;
			case OBJ_MR: mr_release(a, o); break;
			case OBJ_PD: fc_pd_free(fc_node_mrs(d->node), o->u.pd.pd); obj_put(o); break;
			}
		}
	LOG_I("api: client %u (pid %d) %s: released %u QPs, %u AHs, %u SRQs, %u CQs, %u MRs, "
	      "%u PDs, %u listeners, %u XRC domains", c->id, (int)c->pid, why, n[OBJ_QP],
	      n[OBJ_AH], n[OBJ_SRQ], n[OBJ_CQ], n[OBJ_MR], n[OBJ_PD], n[OBJ_LISTENER],
	      n[OBJ_XRCD]);
	ev_io_stop(d->loop, &c->w);
	close(c->fd);
	if (c->ev_fd >= 0) {
		ev_io_stop(d->loop, &c->ev_w);
		close(c->ev_fd);
	}
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->db_fd >= 0) {
		ev_io_stop(d->loop, &c->db_w);
		close(c->db_fd);
	}
	for (struct client **pp = &a->clients; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	a->nclients--;
	a->st.disconnects++;
	for (uint32_t i = 0; i < c->hiwat; i += OBJ_CHUNK)
		free(c->chunk[i / OBJ_CHUNK]);
	free(c->chunk);
	arena_close(c);
	free(c);
	fd_kick(d);
}

/* ---- requests ---- */

static void db_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct client *c = w->data;
	uint64_t v;

	(void)loop;
	(void)revents;
	if (read(c->db_fd, &v, sizeof(v)) == sizeof(v))
		c->a->st.doorbells++;
	/* the work happens in fd_api_prepare, which runs before the loop sleeps again */
}

static int do_hello(struct client *c, const struct fc_api_hdr *h, const void *body, int *fds,
		    unsigned nfds)
{
	const struct fc_api_hello *m = body;
	struct fc_api_hello_rep rep = {
		.max_sge = FC_RING_SGE_MAX, .max_ring_entries = RING_ENTRIES_MAX,
		.max_msg_bytes = fc_rdma_get_cfg(fc_node_rdma(c->a->d->node))->max_msg_bytes,
		.mtu_bytes = c->a->d->cfg.mtu_bytes,
	};

	int sv[2], afd = -1, rc;

	if (c->hello || nfds != 1 || m->client_version != FC_API_VERSION)
		return reply(c, h, c->hello ? -EALREADY : nfds != 1 ? -EINVAL : -EPROTO, NULL, 0,
			     NULL, 0);
	/* the event socket (api.h): we keep one end, only to write (never blocking) */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return reply(c, h, -errno, NULL, 0, NULL, 0);
	shutdown(sv[0], SHUT_RD);
	c->ev_fd = sv[0];
	ev_io_init(&c->ev_w, ev_writable_cb, c->ev_fd, EV_WRITE);
	c->ev_w.data = c;
	if ((m->flags & FC_API_HELLO_ARENA) && (afd = arena_open(c)) < 0)
		LOG_W("api: client %u (pid %d): no arena (%s): its QPs get rings of their own",
		      c->id, (int)c->pid, strerror(-afd));
	c->db_fd = fds[0];
	fds[0] = -1;
	fcntl(c->db_fd, F_SETFL, O_NONBLOCK);
	ev_io_init(&c->db_w, db_cb, c->db_fd, EV_READ);
	c->db_w.data = c;
	ev_io_start(c->a->d->loop, &c->db_w);
	c->hello = 1;
	/* the event socket first, then the arena (api.h, FC_API_HELLO) */
	int out[2] = { sv[1], afd };

	rc = reply(c, h, 0, &rep, sizeof(rep), out, afd >= 0 ? 2 : 1);
	close(sv[1]);
	if (afd >= 0)
		close(afd);
	return rc;
}

/* QUERY_DEVICE: every limit, read from where it is enforced: the engine's tables as the
 * daemon's configuration sized them (--max-qps ...), the MR table, the per-client quotas
 * obj_quota enforces (--client-max-*), this file's own bounds. */
static int do_query_device(struct client *c, const struct fc_api_hdr *h)
{
	const struct fd_cfg *cfg = &c->a->d->cfg;
	struct fc_node *n = c->a->d->node;
	const struct fc_rdma_cfg *rc = fc_rdma_get_cfg(fc_node_rdma(n));
	const struct fc_mr_table *mrs = fc_node_mrs(n);
	struct fc_api_device_rep rep = {
		.max_msg_bytes = rc->max_msg_bytes, .max_mr_bytes = MR_BYTES_MAX,
		.mtu_bytes = rc->mtu_bytes, .max_qps = rc->max_qps, .max_conns = rc->max_conns,
		.max_cqs = rc->max_cqs, .max_cqes = CQ_ENTRIES_MAX,
		.max_mrs = fc_mr_table_mr_cap(mrs), .max_pds = fc_mr_table_pd_cap(mrs),
		.max_srqs = rc->max_srqs, .max_ahs = rc->max_ahs,
		.max_send_wrs = RING_ENTRIES_MAX, .max_recv_wrs = RING_ENTRIES_MAX,
		.max_srq_wrs = RING_ENTRIES_MAX, .max_send_sge = FC_RING_SGE_MAX,
		.max_recv_sge = FC_RING_SGE_MAX, .max_srq_sge = FC_RING_SGE_MAX,
		.max_inflight = INFLIGHT_MAX, .max_objs = cfg->client_max_objects,
		.max_clients = cfg->max_clients, .max_client_qps = cfg->client_max_qps,
		.max_client_mrs = cfg->client_max_mrs,
		.atomic_cap = FALCON_ATOMIC_HCA, .atomic_bytes = sizeof(uint64_t),
		.flags = FALCON_DEVICE_MASKED_ATOMICS | FALCON_DEVICE_SEND_WITH_INV |
			 FALCON_DEVICE_XRC | FALCON_DEVICE_SRQ,
	};

	return reply(c, h, 0, &rep, sizeof(rep), NULL, 0);
}

/* QUERY_ADDR: the address and ports the daemon was told to listen on. */
static int do_query_addr(struct client *c, const struct fc_api_hdr *h)
{
	const struct fd_daemon *d = c->a->d;
	struct fc_api_addr_rep rep = { .data_port = d->cfg.data_port, .cm_port = d->cfg.cm_port };

	snprintf(rep.addr, sizeof(rep.addr), "%s", d->cfg.listen_addr);
	return reply(c, h, 0, &rep, sizeof(rep), NULL, 0);
}

static int do_alloc_pd(struct client *c, const struct fc_api_hdr *h)
{
	struct fc_api_handle rep = { 0 };
	int rc;
	struct obj *o = obj_new(c, OBJ_PD, &rep.handle, &rc);

	if (!o)
		return reply(c, h, rc, NULL, 0, NULL, 0);
	if ((rc = fc_pd_alloc(fc_node_mrs(c->a->d->node), &o->u.pd.pd))) {
		obj_put(o);
		return reply(c, h, rc, NULL, 0, NULL, 0);
	}
	return reply(c, h, 0, &rep, sizeof(rep), NULL, 0);
}

/* ---- the client's own memory, reached by copy (DESIGN.md, "The client data path") ----
 * A region not inside a buffer of falcon_alloc_buf is read and written in the client's
 * address space with process_vm_readv/writev, as its pid names it. Before each access
 * the pidfd says whether that process still lives, so a pid reused by another process
 * after the client died is never touched (its regions go when its socket closes). */
static int client_alive(const struct client *c)
{
	struct pollfd p = { .fd = c->pidfd, .events = POLLIN };

	return c->pidfd < 0 || poll(&p, 1, 0) == 0; /* a pidfd polls readable at exit */
}

static int vm_read(void *ctx, const void *src, void *dst, size_t n)
{
	struct client *c = ctx;
	struct iovec l = { dst, n }, r = { (void *)src, n };

	if (!client_alive(c))
		return -ESRCH;
	return process_vm_readv(c->pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -EFAULT;
}

static int vm_write(void *ctx, void *dst, const void *src, size_t n)
{
	struct client *c = ctx;
	struct iovec l = { (void *)src, n }, r = { dst, n };

	if (!client_alive(c))
		return -ESRCH;
	return process_vm_writev(c->pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -EFAULT;
}

static const struct fc_mr_mem_ops vm_ops = { .read = vm_read, .write = vm_write };

/* The region of m at host (ops NULL: our mapping map of map_len bytes, unmapped if this
 * fails; else the client's memory reached through ops) as an MR object of c, and the
 * reply. */
static int mr_register(struct client *c, const struct fc_api_hdr *h,
		       const struct fc_api_reg_mr *m, struct obj *pd, void *host, void *map,
		       size_t map_len, const struct fc_mr_mem_ops *ops)
{
	struct fc_api_reg_mr_rep rep = { 0 };
	int rc;
	struct obj *o = obj_new(c, OBJ_MR, &rep.handle, &rc);

	if (o)
		rc = fc_mr_reg_ext(fc_node_mrs(c->a->d->node), pd->u.pd.pd, host, m->iova, m->len,
				   m->access, ops, c, &o->u.mr.k);

	if (rc) {
		if (map)
			munmap(map, map_len);
		if (o)
			obj_put(o);
		return reply(c, h, rc, NULL, 0, NULL, 0);
	}
	o->u.mr.pd_h = m->pd;
	o->u.mr.map = map;
	o->u.mr.map_len = map_len;
	o->u.mr.iova = m->iova;
	o->u.mr.len = m->len;
	o->u.mr.access = m->access;
	pd->refs++;
	if (ops)
		c->a->st.mr_by_copy++;
	rep.lkey = o->u.mr.k.lkey;
	rep.rkey = o->u.mr.k.rkey;
	return reply(c, h, 0, &rep, sizeof(rep), NULL, 0);
}

/* REG_MR without a memfd: [iova, iova+len) of the client's own address space. Both ends
 * are read once first, so an unmapped range (-EFAULT) or a process we may not reach
 * (-EPERM: another user, Yama) is refused at registration, not at the first transfer. */
static int reg_mr_by_copy(struct client *c, const struct fc_api_hdr *h,
			  const struct fc_api_reg_mr *m, struct obj *pd)
{
	uint8_t b;
	struct iovec l = { &b, 1 }, r[2] = { { (void *)(uintptr_t)m->iova, 1 },
					     { (void *)(uintptr_t)(m->iova + m->len - 1), 1 } };

	if (m->iova + m->len < m->iova)
		return reply(c, h, -EINVAL, NULL, 0, NULL, 0);
	for (int i = 0; i < 2; i++)
		if (process_vm_readv(c->pid, &l, 1, &r[i], 1, 0) != 1)
			return reply(c, h, errno == EPERM ? -EPERM : -EFAULT, NULL, 0, NULL, 0);
	return mr_register(c, h, m, pd, (void *)(uintptr_t)m->iova, NULL, 0, &vm_ops);
}

static int do_reg_mr(struct client *c, const struct fc_api_hdr *h, const void *body, int *fds,
		     unsigned nfds)
{
	const struct fc_api_reg_mr *m = body;
	struct obj *pd = obj_get(c, m->pd, OBJ_PD);
	uint64_t map_off, delta;
	struct stat stt;
	int seals;
	void *map;

	if (!pd)
		return reply(c, h, -ENOENT, NULL, 0, NULL, 0);
	if (nfds > 1 || !m->len || m->len > MR_BYTES_MAX || m->offset > MR_BYTES_MAX ||
	    m->access & ~(uint32_t)FC_MR_ACCESS_ALL)
		return reply(c, h, -EINVAL, NULL, 0, NULL, 0);
	if (!nfds)
		return reg_mr_by_copy(c, h, m, pd);
	seals = fcntl(fds[0], F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return reply(c, h, -EPERM, NULL, 0, NULL, 0);
	if (fstat(fds[0], &stt) < 0 || (uint64_t)stt.st_size < m->offset + m->len)
		return reply(c, h, -EFAULT, NULL, 0, NULL, 0);
	map_off = m->offset & ~(PAGE - 1);
	delta = m->offset - map_off;
	map = mmap(NULL, delta + m->len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], (off_t)map_off);
	if (map == MAP_FAILED)
		return reply(c, h, -errno, NULL, 0, NULL, 0);
	return mr_register(c, h, m, pd, (uint8_t *)map + delta, map, delta + m->len, NULL);
}

/* A shared receive queue whose WRs the client writes into a ring it maps (FC_RING_RQ);
 * fd_api_prepare takes them as it takes a QP's. */
static int do_create_srq(struct client *c, const struct fc_api_hdr *h, const void *body)
{
	const struct fc_api_create_srq *m = body;
	struct fc_rdma *d = fc_node_rdma(c->a->d->node);
	struct fc_api_create_srq_rep rep = { 0 };
	struct obj *pd = obj_get(c, m->pd, OBJ_PD), *o;
	struct obj *xrcd = m->xrcd ? obj_get(c, m->xrcd, OBJ_XRCD) : NULL;
	struct obj *cq = m->cq ? obj_get(c, m->cq, OBJ_CQ) : NULL;
	struct fc_rdma_srq_init si = { 0 };
	size_t bytes;
	void *ring;
	int fd, rc;

	if (!pd || (m->xrcd && !xrcd) || (m->cq && !cq))
		return reply(c, h, -ENOENT, NULL, 0, NULL, 0);
	if (!pow2_ok(m->entries, RING_ENTRIES_MAX) || m->max_sge > FC_RING_SGE_MAX ||
	    !xrcd != !cq || m->pad)
		return reply(c, h, -EINVAL, NULL, 0, NULL, 0);
	bytes = (fc_rdma_ring_bytes(FC_RING_RQ, m->entries) + PAGE - 1) & ~(PAGE - 1);
	if (!(o = obj_new(c, OBJ_SRQ, &rep.handle, &rc)))
		return reply(c, h, rc, NULL, 0, NULL, 0);
	if ((fd = shared_mem("falcon-srq", bytes, &ring)) < 0) {
		obj_put(o);
		return reply(c, h, fd, NULL, 0, NULL, 0);
	}
	si.pd = pd->u.pd.pd;
	si.depth = m->entries;
	si.max_sge = m->max_sge ? m->max_sge : FC_RING_SGE_MAX;
	si.xrcd = xrcd ? xrcd->u.xrcd.num : 0;
	si.cq = cq ? cq->u.cq.cqn : 0;
	if ((rc = fc_rdma_ring_init(ring, bytes, FC_RING_RQ, m->entries)) ||
	    (rc = fc_rdma_srq_create(d, &si, &o->u.srq.srqn)))
		goto fail;
	if ((rc = fc_rdma_srq_attach_ring(d, o->u.srq.srqn, ring, bytes))) {
		fc_rdma_srq_destroy(d, o->u.srq.srqn);
		goto fail;
	}
	o->u.srq.ring = ring;
	o->u.srq.bytes = bytes;
	sweep_add(o);
	o->u.srq.pd_h = m->pd;
	o->u.srq.xrcd_h = m->xrcd;
	o->u.srq.cq_h = m->cq;
	pd->refs++;
	if (xrcd) {
		xrcd->refs++;
		cq->refs++;
	}
	rep.srqn = o->u.srq.srqn;
	rep.ring_bytes = bytes;
	rc = reply(c, h, 0, &rep, sizeof(rep), &fd, 1);
	close(fd);
	return rc;
fail:
	munmap(ring, bytes);
	close(fd);
	obj_put(o);
	return reply(c, h, rc, NULL, 0, NULL, 0);
}

static int do_create_cq(struct client *c, const struct fc_api_hdr *h, const void *body)
{
	const struct fc_api_create_cq *m = body;
	struct fc_rdma *d = fc_node_rdma(c->a->d->node);
	struct fc_api_create_cq_rep rep = { 0 };
	struct obj *o;
	int fd, evfd, rc;
	size_t bytes;
	void *ring;

	if (!pow2_ok(m->entries, CQ_ENTRIES_MAX))
		return reply(c, h, -EINVAL, NULL, 0, NULL, 0);
	bytes = (fc_rdma_ring_bytes(FC_RING_CQ, m->entries) + PAGE - 1) & ~(PAGE - 1);
	o = obj_new(c, OBJ_CQ, &rep.handle, &rc);
	if (!o)
		return reply(c, h, rc, NULL, 0, NULL, 0);
	if ((fd = shared_mem("falcon-cq", bytes, &ring)) < 0) {
		obj_put(o);
		return reply(c, h, fd, NULL, 0, NULL, 0);
	}
	evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (evfd < 0 || (rc = fc_rdma_ring_init(ring, bytes, FC_RING_CQ, m->entries)) ||
	    (rc = fc_rdma_cq_create(d, m->entries, &o->u.cq.cqn))) {
		rc = evfd < 0 ? -errno : rc;
		goto fail;
	}
	if ((rc = fc_rdma_cq_attach_ring(d, o->u.cq.cqn, ring, bytes))) {
		fc_rdma_cq_destroy(d, o->u.cq.cqn);
		goto fail;
	}
	fc_rdma_cq_set_user(d, o->u.cq.cqn, obj_cookie(c, rep.handle)); /* its events */
	o->u.cq.ring = ring;
	o->u.cq.bytes = bytes;
	sweep_add(o);
	o->u.cq.evfd = evfd;
	o->u.cq.entries = m->entries;
	rep.ring_bytes = bytes;
	rc = reply(c, h, 0, &rep, sizeof(rep), (int[]){ fd, evfd }, 2);
	close(fd);
	return rc;
fail:
	if (evfd >= 0)
		close(evfd);
	munmap(ring, bytes);
	close(fd);
	obj_put(o);
	return reply(c, h, rc, NULL, 0, NULL, 0);
}

static int qp_reply(struct client *c, const struct fc_api_hdr *h, struct obj *o);

static void qp_done(void *ctx, int status, uint32_t qpn, uint32_t rqpn)
{
	struct obj *o = ctx;
	struct client *c = o->c;
	struct fc_api_hdr h = { .type = o->u.qp.req_type, .seq = o->u.qp.seq };

	if (status) {
		o->u.qp.cm_id = 0; /* the CM has freed its record */
		qp_release(c->a, o); /* also ends the pending count */
		reply_why(c, &h, status);
		return;
	}
	c->pending--;
	o->u.qp.state = QP_READY;
	o->u.qp.qpn = qpn;
	o->u.qp.rqpn = rqpn;
	qp_reply(c, &h, o);
	fd_kick(c->a->d);
}

/* The engine's QP type of a public one, 0 for none. */
static uint8_t engine_qpt(uint8_t t)
{
	return t == FALCON_QPT_RC ? FC_RDMA_QPT_RC : t == FALCON_QPT_UD ? FC_RDMA_QPT_UD :
	       t == FALCON_QPT_XRC_SEND ? FC_RDMA_QPT_XRC_INI :
	       t == FALCON_QPT_XRC_RECV ? FC_RDMA_QPT_XRC_TGT : 0;
}

/* The QP object, its rings and the engine's init for it (CREATE_QP, CONNECT, ACCEPT):
 * what each type uses is checked and taken, the rest must be 0 (falcon.h). */
static int qp_prepare(struct client *c, const struct fc_api_hdr *h,
		      const struct fc_api_qp_attr *q, struct fd_qp_spec *spec, struct obj **out)
{
	uint8_t t = engine_qpt(q->type);
	int sends = t && t != FC_RDMA_QPT_XRC_TGT;
	int recvs = t == FC_RDMA_QPT_RC || t == FC_RDMA_QPT_UD;
	struct obj *pd = obj_get(c, q->pd, OBJ_PD);
	struct obj *scq = sends ? obj_get(c, q->send_cq, OBJ_CQ) : NULL;
	struct obj *rcq = recvs ? obj_get(c, q->recv_cq, OBJ_CQ) : NULL;
	struct obj *srq = recvs && q->srq ? obj_get(c, q->srq, OBJ_SRQ) : NULL;
	struct obj *xrcd = t == FC_RDMA_QPT_XRC_TGT ? obj_get(c, q->xrcd, OBJ_XRCD) : NULL, *o;
	size_t sq_bytes = 0, rq_bytes = 0, rq_off = 0;
	uint32_t handle;
	int fd = -1, rc;

	if (!t)
		return -EINVAL;
	if (!pd || (sends && !scq) || (recvs && (!rcq || (q->srq && !srq))) ||
	    (t == FC_RDMA_QPT_XRC_TGT && !xrcd))
		return -ENOENT;
	if ((!sends && (q->send_cq || q->sq_entries)) ||
	    (!recvs && (q->recv_cq || q->srq || q->rq_entries)) ||
	    (t != FC_RDMA_QPT_XRC_TGT && q->xrcd) || (t != FC_RDMA_QPT_UD && q->qkey))
		return -EINVAL; /* a field the type does not use */
	if (srq && (srq->u.srq.pd_h != q->pd || srq->u.srq.xrcd_h))
		return -EINVAL; /* verbs: an SRQ of another PD; an XRC SRQ is no QP's */
	if ((scq && fc_rdma_cq_overflowed(fc_node_rdma(c->a->d->node), scq->u.cq.cqn) == 1) ||
	    (rcq && fc_rdma_cq_overflowed(fc_node_rdma(c->a->d->node), rcq->u.cq.cqn) == 1))
		return -EIO; /* nothing of it could complete (falcon.h, falcon_poll_cq) */
	if ((sends && (!pow2_ok(q->sq_entries, RING_ENTRIES_MAX) ||
		       q->max_send_sge > FC_RING_SGE_MAX || !q->max_inflight ||
		       q->max_inflight > INFLIGHT_MAX)) ||
	    (recvs && !srq && !pow2_ok(q->rq_entries, RING_ENTRIES_MAX)) ||
	    q->max_recv_sge > FC_RING_SGE_MAX || q->ordering > FALCON_ORDER_WEAK ||
	    q->rnr_retry > 7 || q->min_rnr_timer > 31 || q->err_mode > FALCON_ERR_CIE ||
	    q->timeout > 31 || q->retry_cnt > 7)
		return -EINVAL;
	if (c->pending >= 16)
		return -EBUSY;
	if (sends)
		sq_bytes = fc_rdma_ring_bytes(FC_RING_SQ, q->sq_entries);
	if (recvs && !srq)
		rq_bytes = fc_rdma_ring_bytes(FC_RING_RQ, q->rq_entries);
	/* both rings in as few pages as they fit (each on its own cache lines) */
	rq_off = (sq_bytes + RING_ALIGN - 1) & ~(size_t)(RING_ALIGN - 1);
	o = obj_new(c, OBJ_QP, &handle, &rc);
	if (!o)
		return rc;
	o->u.qp.rings_fd = -1;
	o->u.qp.bytes = rq_off + rq_bytes;
	o->u.qp.rq_off = rq_bytes ? rq_off : 0;
	if (o->u.qp.bytes &&
	    (o->u.qp.arena_unit = arena_alloc(c, o->u.qp.bytes, &o->u.qp.arena_class))) {
		o->u.qp.rings = (uint8_t *)c->arena + (size_t)o->u.qp.arena_unit * FC_ARENA_UNIT;
		c->arena_slot[o->u.qp.arena_unit] = o->slot + 1;
	} else if (o->u.qp.bytes) {
		o->u.qp.bytes = (o->u.qp.bytes + PAGE - 1) & ~(PAGE - 1);
		if ((fd = shared_mem("falcon-qp", o->u.qp.bytes, &o->u.qp.rings)) < 0) {
			obj_put(o);
			return fd;
		}
	}
	o->u.qp.rings_fd = fd;
	if (o->u.qp.bytes)
		sweep_add(o); /* looked into once ready; an arena QP then when its bit says */
	if (sq_bytes)
		fc_rdma_ring_init(o->u.qp.rings, sq_bytes, FC_RING_SQ, q->sq_entries);
	if (rq_bytes)
		fc_rdma_ring_init((uint8_t *)o->u.qp.rings + rq_off, rq_bytes, FC_RING_RQ,
				  q->rq_entries);
	o->u.qp.state = QP_CONNECTING;
	o->u.qp.type = t;
	o->u.qp.pd_h = q->pd;
	o->u.qp.scq_h = scq ? q->send_cq : 0;
	o->u.qp.rcq_h = rcq ? q->recv_cq : 0;
	o->u.qp.srq_h = srq ? q->srq : 0;
	o->u.qp.xrcd_h = xrcd ? q->xrcd : 0;
	o->u.qp.seq = h->seq;
	o->u.qp.req_type = h->type;
	pd->refs++;
	if (scq)
		scq->refs++;
	if (rcq)
		rcq->refs++;
	if (srq)
		srq->refs++;
	if (xrcd)
		xrcd->refs++;
	memset(spec, 0, sizeof(*spec));
	fc_rdma_qp_init_default(&spec->init);
	spec->init.type = t;
	/* UD datagrams go through unordered (M:N) connections, 6.6.3 */
	spec->init.order = q->ordering == FALCON_ORDER_WEAK || t == FC_RDMA_QPT_UD ?
				   FC_RDMA_ORDER_WEAK : FC_RDMA_ORDER_STRONG;
	o->u.qp.order = spec->init.order;
	spec->init.pd = pd->u.pd.pd;
	spec->init.send_cq = scq ? scq->u.cq.cqn : 0;
	spec->init.recv_cq = rcq ? rcq->u.cq.cqn : 0;
	spec->init.srq = srq ? srq->u.srq.srqn : 0;
	spec->init.xrcd = xrcd ? xrcd->u.xrcd.num : 0;
	spec->init.qkey = q->qkey;
	spec->init.sq_depth = sends ? q->sq_entries : 0;
	spec->init.rq_depth = rq_bytes ? q->rq_entries : 0;
	spec->init.max_send_sge = q->max_send_sge ? q->max_send_sge : FC_RING_SGE_MAX;
	spec->init.max_recv_sge = q->max_recv_sge ? q->max_recv_sge : FC_RING_SGE_MAX;
	spec->init.max_inflight = sends ? q->max_inflight : 0;
	/* a failed datagram does not stop a UD QP (IB moves it to SQE, where receives go on) */
	spec->init.err_mode = q->err_mode == FALCON_ERR_CIE || t == FC_RDMA_QPT_UD ?
				      FC_RDMA_MODE_CIE : FC_RDMA_MODE_VERBS;
	spec->init.rnr_retry = q->rnr_retry;
	spec->init.min_rnr_timer = q->min_rnr_timer;
	spec->init.timeout_ns = fc_rdma_verbs_timeout_ns(q->timeout, q->retry_cnt);
	spec->init.user = obj_cookie(c, handle); /* its async events come back to it */
	o->u.qp.timeout = q->timeout;
	o->u.qp.retry_cnt = q->retry_cnt;
	o->u.qp.rnr_retry = q->rnr_retry;
	o->u.qp.min_rnr_timer = q->min_rnr_timer;
	spec->sq = sq_bytes ? o->u.qp.rings : NULL;
	spec->sq_bytes = sq_bytes;
	spec->rq = rq_bytes ? (uint8_t *)o->u.qp.rings + rq_off : NULL;
	spec->rq_bytes = rq_bytes;
	*out = o;
	return 0;
}

/* The reply of CONNECT / ACCEPT / CREATE_QP: the QP and its rings' memfd (none: a QP
 * without rings). */
static int qp_reply(struct client *c, const struct fc_api_hdr *h, struct obj *o)
{
	struct fc_api_qp_rep rep = { .handle = obj_handle(o),
				     .qpn = o->u.qp.qpn, .remote_qpn = o->u.qp.rqpn,
				     .arena_unit = o->u.qp.arena_unit,
				     .rings_bytes = o->u.qp.bytes, .rq_offset = o->u.qp.rq_off };
	int rc = reply(c, h, 0, &rep, sizeof(rep), &o->u.qp.rings_fd, o->u.qp.rings_fd >= 0);

	if (o->u.qp.rings_fd >= 0)
		close(o->u.qp.rings_fd);
	o->u.qp.rings_fd = -1;
	return rc;
}

/* CREATE_QP: the engine QP at once, in RESET, unbound (RC / XRC: bound at RTR). */
static int do_create_qp(struct client *c, const struct fc_api_hdr *h, const void *body)
{
	struct fc_rdma *d = fc_node_rdma(c->a->d->node);
	struct fd_qp_spec spec;
	struct obj *o;
	int rc;

	if ((rc = qp_prepare(c, h, body, &spec, &o)))
		return reply(c, h, rc, NULL, 0, NULL, 0);
	o->u.qp.by_api = 1;
	o->u.qp.state = QP_READY;
	if ((rc = fc_rdma_qp_create(d, &spec.init, &o->u.qp.qpn))) {
		o->u.qp.by_api = 0;
		qp_release(c->a, o);
		return reply(c, h, rc, NULL, 0, NULL, 0);
	}
	if ((spec.sq || spec.rq) &&
	    (rc = fc_rdma_qp_attach_rings(d, o->u.qp.qpn, spec.sq, spec.sq_bytes, spec.rq,
					  spec.rq_bytes))) {
		qp_release(c->a, o);
		return reply(c, h, rc, NULL, 0, NULL, 0);
	}
	return qp_reply(c, h, o);
}

/* The end of a binding (fd_cm_bind): both QPs in RTR on their connection, or failed. */
static void bind_done(void *ctx, int status, uint32_t qpn, uint32_t rqpn)
{
	struct obj *o = ctx;
	struct fd_api *a = o->c->a;
	struct fc_rdma *d = fc_node_rdma(a->d->node);
	struct fc_rdma_qp_attr at = { .state = FC_RDMA_QPS_RTS };

	(void)rqpn;
	if (status) {
		o->u.qp.cm_id = 0; /* the CM has freed its record */
		a->st.bind_failed++;
		LOG_W("api: client %u: QP %u could not be connected to QP %u (%s): QP in error",
		      o->c->id, qpn ? qpn : o->u.qp.qpn, o->u.qp.rqpn, strerror(-status));
		at.state = FC_RDMA_QPS_ERR;
		fc_rdma_qp_modify(d, o->u.qp.qpn, &at);
		obj_event(o, EVB_QP_FATAL); /* an error, not the client's modify */
	} else {
		o->u.qp.connected = 1;
		if (o->u.qp.want_rts)
			fc_rdma_qp_modify(d, o->u.qp.qpn, &at);
	}
	fd_kick(a->d);
}

static const uint8_t to_engine_state[] = {
	[FALCON_QPS_RESET] = FC_RDMA_QPS_RESET, [FALCON_QPS_INIT] = FC_RDMA_QPS_INIT,
	[FALCON_QPS_RTR] = FC_RDMA_QPS_RTR, [FALCON_QPS_RTS] = FC_RDMA_QPS_RTS,
	[4] = 0xFF, [5] = 0xFF, [FALCON_QPS_ERR] = FC_RDMA_QPS_ERR,
};
static const uint8_t to_public_state[] = {
	[FC_RDMA_QPS_RESET] = FALCON_QPS_RESET, [FC_RDMA_QPS_INIT] = FALCON_QPS_INIT,
	[FC_RDMA_QPS_RTR] = FALCON_QPS_RTR, [FC_RDMA_QPS_RTS] = FALCON_QPS_RTS,
	[FC_RDMA_QPS_ERR] = FALCON_QPS_ERR,
};

/* MODIFY_QP. A connected QP's RTR starts its binding and the QP stays in INIT for the
 * engine until the connection is open; an RTS asked for meanwhile is applied then. */
/* MODIFY_QP's timers (falcon.h, "Timers"): kept for QUERY_QP, given to the engine QP,
 * which hands timeout x (retry_cnt + 1) to its connection. */
static int qp_set_timers(struct client *c, struct obj *o, const struct fc_api_modify_qp *m)
{
	struct fc_rdma *d = fc_node_rdma(c->a->d->node);

	if (o->u.qp.state == QP_CONNECTING)
		return -EBUSY;
	if (m->attr_mask & FALCON_QP_ATTR_TIMEOUT)
		o->u.qp.timeout = m->timeout;
	if (m->attr_mask & FALCON_QP_ATTR_RETRY_CNT)
		o->u.qp.retry_cnt = m->retry_cnt;
	if (m->attr_mask & FALCON_QP_ATTR_RNR_RETRY)
		o->u.qp.rnr_retry = m->rnr_retry;
	if (m->attr_mask & FALCON_QP_ATTR_MIN_RNR_TIMER)
		o->u.qp.min_rnr_timer = m->min_rnr_timer;
	return fc_rdma_qp_set_timers(d, o->u.qp.qpn,
				     fc_rdma_verbs_timeout_ns(o->u.qp.timeout, o->u.qp.retry_cnt),
				     o->u.qp.rnr_retry, o->u.qp.min_rnr_timer);
}

static int do_modify_qp(struct client *c, const struct fc_api_hdr *h, const void *body)
{
	const struct fc_api_modify_qp *m = body;
	struct fc_rdma *d = fc_node_rdma(c->a->d->node);
	struct obj *o = obj_get(c, m->handle, OBJ_QP);
	struct fc_rdma_qp_attr at = { 0 };
	struct sockaddr_storage ss;
	int connected, rc, binding;
	uint8_t to;

	if (!o)
		return reply(c, h, -ENOENT, NULL, 0, NULL, 0);
	if (m->state >= sizeof(to_engine_state) || (to = to_engine_state[m->state]) == 0xFF ||
	    m->addr_len > sizeof(m->addr) || (m->attr_mask & ~0xFu) || m->timeout > 31 ||
	    m->retry_cnt > 7 || m->rnr_retry > 7 || m->min_rnr_timer > 31 ||
	    (!o->u.qp.by_api && !m->attr_mask))
		return reply(c, h, -EINVAL, NULL, 0, NULL, 0);
	if (m->attr_mask && (rc = qp_set_timers(c, o, m)))
		return reply(c, h, rc, NULL, 0, NULL, 0);
	if (!o->u.qp.by_api || (m->attr_mask && fc_rdma_qp_state(d, o->u.qp.qpn) == to))
		return reply(c, h, 0, NULL, 0, NULL, 0); /* the timers alone */
	connected = o->u.qp.type != FC_RDMA_QPT_UD;
	binding = o->u.qp.cm_id > 0 && !o->u.qp.connected;
	at.state = to;
	if (connected && to == FC_RDMA_QPS_RTR) {
		if (binding || o->u.qp.connected || fc_rdma_qp_state(d, o->u.qp.qpn) != FC_RDMA_QPS_INIT ||
		    !m->addr_len || m->dest_qpn > FC_RDMA_QPN_MASK)
			return reply(c, h, -EINVAL, NULL, 0, NULL, 0);
		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, m->addr, m->addr_len);
		o->u.qp.rqpn = m->dest_qpn;
		o->u.qp.cm_id = -1; /* bind_done may run inside fd_cm_bind (and set 0) */
		int64_t id = fd_cm_bind(c->a->d->cm, (struct sockaddr *)&ss, m->addr_len, o->u.qp.qpn,
					m->dest_qpn, o->u.qp.type, o->u.qp.order, m->timeout_ms,
					bind_done, o);

		if (id < 0) {
			o->u.qp.cm_id = 0;
			return reply(c, h, (int)id, NULL, 0, NULL, 0);
		}
		if (o->u.qp.cm_id == -1)
			o->u.qp.cm_id = id;
		return reply(c, h, 0, NULL, 0, NULL, 0);
	}
	if (connected && to == FC_RDMA_QPS_RTS && binding) {
		o->u.qp.want_rts = 1; /* bind_done applies it */
		return reply(c, h, 0, NULL, 0, NULL, 0);
	}
	if (connected && to == FC_RDMA_QPS_RESET && o->u.qp.cm_id > 0)
		return reply(c, h, -EINVAL, NULL, 0, NULL, 0); /* its connection is for good */
	if (to == FC_RDMA_QPS_ERR && binding) {
		fd_cm_close(c->a->d->cm, o->u.qp.cm_id);
		o->u.qp.cm_id = 0;
	}
	rc = fc_rdma_qp_modify(d, o->u.qp.qpn, &at);
	fd_kick(c->a->d); /* RTS: what waits in the send ring goes */
	return reply(c, h, rc, NULL, 0, NULL, 0);
}

static int do_query_qp(struct client *c, const struct fc_api_hdr *h, uint32_t handle)
{
	struct obj *o = obj_get(c, handle, OBJ_QP);
	struct fc_api_query_qp_rep rep = { 0 };
	int s;

	if (!o)
		return reply(c, h, -ENOENT, NULL, 0, NULL, 0);
	if (o->u.qp.state == QP_CONNECTING)
		return reply(c, h, -EBUSY, NULL, 0, NULL, 0);
	s = fc_rdma_qp_state(fc_node_rdma(c->a->d->node), o->u.qp.qpn);
	if (s < 0 || s > FC_RDMA_QPS_ERR)
		return reply(c, h, -EIO, NULL, 0, NULL, 0);
	rep.state = to_public_state[s];
	if (o->u.qp.by_api && o->u.qp.cm_id > 0 && !o->u.qp.connected && s == FC_RDMA_QPS_INIT)
		rep.state = o->u.qp.want_rts ? FALCON_QPS_RTS : FALCON_QPS_RTR; /* as asked */
	rep.connected = o->u.qp.type != FC_RDMA_QPT_UD &&
			(!o->u.qp.by_api || o->u.qp.connected) && s != FC_RDMA_QPS_ERR;
	rep.qpn = o->u.qp.qpn;
	rep.remote_qpn = o->u.qp.rqpn;
	rep.timeout = o->u.qp.timeout;
	rep.retry_cnt = o->u.qp.retry_cnt;
	rep.rnr_retry = o->u.qp.rnr_retry;
	rep.min_rnr_timer = o->u.qp.min_rnr_timer;
	return reply(c, h, 0, &rep, sizeof(rep), NULL, 0);
}

/* ---- address handles and XRC domains ---- */

static void ah_done(void *ctx, int status, uint32_t qpn, uint32_t rqpn)
{
	struct obj *o = ctx;
	struct client *c = o->c;
	struct fc_api_hdr h = { .type = o->u.ah.req_type, .seq = o->u.ah.seq };
	struct fc_api_create_ah_rep rep = { .handle = obj_handle(o) };
	struct obj *pd = obj_get(c, o->u.ah.pd_h, OBJ_PD);
	struct fc_txn *t = status ? NULL : fd_cm_conn(c->a->d->cm, o->u.ah.cm_id);

	(void)qpn;
	(void)rqpn;
	if (!status && (!t || !pd))
		status = -EIO;
	if (!status)
		status = fc_rdma_ah_create(fc_node_rdma(c->a->d->node), pd->u.pd.pd, t, &o->u.ah.ahn);
	if (status) {
		if (!t)
			o->u.ah.cm_id = 0; /* the CM has freed its record */
		ah_release(c->a, o);
		reply_why(c, &h, status);
		return;
	}
	c->pending--;
	o->u.ah.ready = 1;
	rep.ahn = o->u.ah.ahn;
	reply(c, &h, 0, &rep, sizeof(rep), NULL, 0);
}

/* CREATE_AH and CREATE_AH_SRC: an AH of pd_h to the daemon whose CM is at ss. */
static int ah_start(struct client *c, const struct fc_api_hdr *h, uint32_t pd_h,
		    const struct sockaddr_storage *ss, socklen_t len, int32_t timeout_ms)
{
	struct obj *pd = obj_get(c, pd_h, OBJ_PD), *o;
	uint32_t handle;
	int64_t id;
	int rc;

	if (!pd)
		return reply(c, h, -ENOENT, NULL, 0, NULL, 0);
	if (c->pending >= 16)
		return reply(c, h, -EBUSY, NULL, 0, NULL, 0);
	if (!(o = obj_new(c, OBJ_AH, &handle, &rc)))
		return reply(c, h, rc, NULL, 0, NULL, 0);
	o->u.ah.pd_h = pd_h;
	o->u.ah.seq = h->seq;
	o->u.ah.req_type = h->type;
	pd->refs++;
	c->pending++;
	id = fd_cm_ah(c->a->d->cm, (const struct sockaddr *)ss, len, timeout_ms, ah_done, o);
	if (id < 0) {
		ah_release(c->a, o);
		return reply_why(c, h, (int)id);
	}
	o->u.ah.cm_id = id;
	if (fd_cm_conn(c->a->d->cm, id)) /* the peer's connection is open already: shared */
		ah_done(o, 0, 0, 0);
	return 0; /* the reply comes from ah_done */
}

static int do_create_ah(struct client *c, const struct fc_api_hdr *h, const void *body)
{
	const struct fc_api_create_ah *m = body;
	struct sockaddr_storage ss;

	if (!m->addr_len || m->addr_len > sizeof(m->addr) || m->pad[0] || m->pad[1] || m->pad[2])
		return reply(c, h, -EINVAL, NULL, 0, NULL, 0);
	memset(&ss, 0, sizeof(ss));
	memcpy(&ss, m->addr, m->addr_len);
	return ah_start(c, h, m->pd, &ss, m->addr_len, m->timeout_ms);
}

/* CREATE_AH_SRC: the sender of a UD completion (src_id = 1 + the node's peer index) is
 * found by the CM, which knows the CM address of each data peer it set up a connection
 * with. */
static int do_create_ah_src(struct client *c, const struct fc_api_hdr *h, const void *body)
{
	const struct fc_api_create_ah_src *m = body;
	struct sockaddr_storage ss;
	socklen_t len;

	if (m->pad)
		return reply(c, h, -EINVAL, NULL, 0, NULL, 0);
	if (!m->src_id || fd_cm_peer_cm_addr(c->a->d->cm, m->src_id - 1, &ss, &len))
		return reply_why(c, h, -ENOENT);
	return ah_start(c, h, m->pd, &ss, len, m->timeout_ms);
}

static int do_open_xrcd(struct client *c, const struct fc_api_hdr *h)
{
	struct fc_api_handle rep = { 0 };
	int rc;
	struct obj *o = obj_new(c, OBJ_XRCD, &rep.handle, &rc);

	if (!o)
		return reply(c, h, rc, NULL, 0, NULL, 0);
	if (!++c->a->next_xrcd) /* daemon-wide, never 0 */
		c->a->next_xrcd = 1;
	o->u.xrcd.num = c->a->next_xrcd;
	return reply(c, h, 0, &rep, sizeof(rep), NULL, 0);
}

static int do_connect(struct client *c, const struct fc_api_hdr *h, const void *body)
{
	const struct fc_api_connect *m = body;
	struct fd_qp_spec spec;
	struct sockaddr_storage ss;
	struct obj *o;
	int64_t id;
	int rc;

	if (m->addr_len > sizeof(m->addr) || m->addr_len > sizeof(ss) || !m->service)
		return reply(c, h, -EINVAL, NULL, 0, NULL, 0);
	if (m->qp.type != FALCON_QPT_RC && m->qp.type != FALCON_QPT_XRC_SEND)
		return reply(c, h, -EINVAL, NULL, 0, NULL, 0);
	memset(&ss, 0, sizeof(ss));
	memcpy(&ss, m->addr, m->addr_len);
	if ((rc = qp_prepare(c, h, &m->qp, &spec, &o)))
		return reply(c, h, rc, NULL, 0, NULL, 0);
	c->pending++;
	id = fd_cm_connect(c->a->d->cm, (struct sockaddr *)&ss, m->addr_len, m->service, &spec,
			   m->timeout_ms, qp_done, o);
	if (id < 0) {
		o->u.qp.cm_id = 0;
		qp_release(c->a, o);
		return reply_why(c, h, (int)id);
	}
	o->u.qp.cm_id = id;
	return 0; /* the reply comes from qp_done */
}

static int do_accept(struct client *c, const struct fc_api_hdr *h, const void *body)
{
	const struct fc_api_accept *m = body;
	struct obj *l = obj_get(c, m->listener, OBJ_LISTENER), *o;
	struct fd_qp_spec spec;
	int64_t id;
	int rc;

	if (!l)
		return reply(c, h, -ENOENT, NULL, 0, NULL, 0);
	if (m->qp.type != FALCON_QPT_RC && m->qp.type != FALCON_QPT_XRC_RECV)
		return reply(c, h, -EINVAL, NULL, 0, NULL, 0);
	if ((rc = qp_prepare(c, h, &m->qp, &spec, &o)))
		return reply(c, h, rc, NULL, 0, NULL, 0);
	c->pending++;
	o->u.qp.cm_id = -1; /* set below; qp_done may run inside fd_cm_accept */
	id = fd_cm_accept(c->a->d->cm, l->u.lst.service, &spec, m->timeout_ms, qp_done, o);
	if (id < 0) {
		o->u.qp.cm_id = 0;
		qp_release(c->a, o);
		return reply_why(c, h, (int)id);
	}
	if (o->type == OBJ_QP && o->u.qp.cm_id == -1)
		o->u.qp.cm_id = id;
	return 0;
}

static void obj_release(struct fd_api *a, struct obj *o)
{
	(void)a;
	obj_put(o);
}

/* Destroy an object QPs may use (a CQ, an SRQ, an XRC domain): -ENOENT (none), -EBUSY
 * (in use), 0. */
static int release_unused(struct fd_api *a, struct obj *o,
			  void (*release)(struct fd_api *, struct obj *))
{
	if (!o)
		return -ENOENT;
	if (o->refs)
		return -EBUSY;
	release(a, o);
	return 0;
}

static int do_destroy(struct client *c, const struct fc_api_hdr *h, uint32_t handle)
{
	struct fd_api *a = c->a;
	struct obj *o;
	int rc = 0;

	switch (h->type) {
	case FC_API_DEALLOC_PD:
		if (!(o = obj_get(c, handle, OBJ_PD)))
			rc = -ENOENT;
		else if (o->refs)
			rc = -EBUSY;
		else if (!(rc = fc_pd_free(fc_node_mrs(a->d->node), o->u.pd.pd)))
			obj_put(o);
		break;
	case FC_API_DEREG_MR:
		if (!(o = obj_get(c, handle, OBJ_MR)))
			rc = -ENOENT;
		else
			mr_release(a, o);
		break;
	case FC_API_DESTROY_CQ:
		rc = release_unused(a, obj_get(c, handle, OBJ_CQ), cq_release);
		break;
	case FC_API_CLOSE_LISTENER:
		if (!(o = obj_get(c, handle, OBJ_LISTENER))) {
			rc = -ENOENT;
		} else {
			fd_cm_unlisten(a->d->cm, o->u.lst.service);
			obj_put(o);
		}
		break;
	case FC_API_DESTROY_QP:
		if (!(o = obj_get(c, handle, OBJ_QP)) || o->u.qp.state == QP_CONNECTING)
			rc = o ? -EBUSY : -ENOENT;
		else
			qp_release(a, o);
		break;
	case FC_API_DESTROY_SRQ:
		rc = release_unused(a, obj_get(c, handle, OBJ_SRQ), srq_release);
		break;
	case FC_API_DESTROY_AH:
		if (!(o = obj_get(c, handle, OBJ_AH)) || !o->u.ah.ready)
			rc = o ? -EBUSY : -ENOENT;
		else
			ah_release(a, o);
		break;
	case FC_API_CLOSE_XRCD:
		rc = release_unused(a, obj_get(c, handle, OBJ_XRCD), obj_release);
		break;
	}
	return reply(c, h, rc, NULL, 0, NULL, 0);
}

static int do_listen(struct client *c, const struct fc_api_hdr *h, const void *body)
{
	const struct fc_api_listen *m = body;
	struct fc_api_handle rep = { 0 };
	struct obj *o;
	int rc;

	if (!m->service)
		return reply(c, h, -EINVAL, NULL, 0, NULL, 0);
	if (!(o = obj_new(c, OBJ_LISTENER, &rep.handle, &rc)))
		return reply(c, h, rc, NULL, 0, NULL, 0);
	if ((rc = fd_cm_listen(c->a->d->cm, m->service, m->backlog, c))) {
		obj_put(o);
		return reply(c, h, rc, NULL, 0, NULL, 0);
	}
	o->u.lst.service = m->service;
	return reply(c, h, 0, &rep, sizeof(rep), NULL, 0);
}

/* One message. Returns 0, or -EPROTO to end the session. */
static int handle(struct client *c, const uint8_t *msg, size_t n, int *fds, unsigned nfds)
{
	const struct fc_api_hdr *h = (const void *)msg;
	const void *body = msg + sizeof(*h);
	int rc = fc_api_msg_check(msg, n);

	c->msgs++;
	c->a->st.msgs++;
	if (rc == -EPROTO)
		return rc;
	if (rc) {
		c->a->st.bad_requests++;
		return reply(c, h, rc, NULL, 0, NULL, 0), 0;
	}
	if (!c->hello && h->type != FC_API_HELLO)
		return reply(c, h, -EPROTO, NULL, 0, NULL, 0), 0;
	if (nfds && h->type != FC_API_HELLO && h->type != FC_API_REG_MR)
		return reply(c, h, -EINVAL, NULL, 0, NULL, 0), 0;
	switch (h->type) {
	case FC_API_HELLO: do_hello(c, h, body, fds, nfds); break;
	case FC_API_ALLOC_PD: do_alloc_pd(c, h); break;
	case FC_API_REG_MR: do_reg_mr(c, h, body, fds, nfds); break;
	case FC_API_CREATE_CQ: do_create_cq(c, h, body); break;
	case FC_API_CREATE_SRQ: do_create_srq(c, h, body); break;
	case FC_API_LISTEN: do_listen(c, h, body); break;
	case FC_API_CONNECT: do_connect(c, h, body); break;
	case FC_API_ACCEPT: do_accept(c, h, body); break;
	case FC_API_CREATE_QP: do_create_qp(c, h, body); break;
	case FC_API_MODIFY_QP: do_modify_qp(c, h, body); break;
	case FC_API_CREATE_AH: do_create_ah(c, h, body); break;
	case FC_API_CREATE_AH_SRC: do_create_ah_src(c, h, body); break;
	case FC_API_OPEN_XRCD: do_open_xrcd(c, h); break;
	case FC_API_QUERY_DEVICE: do_query_device(c, h); break;
	case FC_API_QUERY_ADDR: do_query_addr(c, h); break;
	default: {
		struct fc_api_handle hd;

		memcpy(&hd, body, sizeof(hd));
		if (h->type == FC_API_QUERY_QP)
			do_query_qp(c, h, hd.handle);
		else
			do_destroy(c, h, hd.handle);
	}
	}
	return 0;
}

static void client_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct client *c = w->data;
	struct fd_api *a = c->a;

	(void)loop;
	(void)revents;
	for (int k = 0; k < 16; k++) { /* bounded: other clients get their turn */
		uint8_t buf[FC_API_MSG_MAX + 1];
		union {
			struct cmsghdr c;
			char room[CMSG_SPACE(sizeof(int) * FC_API_FDS_MAX)];
		} cm;
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.room,
				    .msg_controllen = sizeof(cm.room) };
		int fds[FC_API_FDS_MAX] = { -1, -1 };
		unsigned nfds = 0;
		ssize_t n = recvmsg(c->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		for (struct cmsghdr *ch = n >= 0 ? CMSG_FIRSTHDR(&m) : NULL; ch;
		     ch = CMSG_NXTHDR(&m, ch)) {
			if (ch->cmsg_level != SOL_SOCKET || ch->cmsg_type != SCM_RIGHTS)
				continue;
			unsigned k2 = (unsigned)((ch->cmsg_len - CMSG_LEN(0)) / sizeof(int));

			for (unsigned i = 0; i < k2; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(ch) + i * sizeof(int), sizeof(int));
				if (nfds < FC_API_FDS_MAX)
					fds[nfds++] = fd;
				else
					close(fd); /* more than a message may carry */
			}
		}
		/* n == 0: the end of the stream, or an empty message (which no client sends):
		 * either way the session ends, and descriptors that came with it are closed */
		int rc = n <= 0 ? -ECONNRESET :
			 (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ? -EPROTO :
			 handle(c, buf, (size_t)n, fds, nfds);

		for (unsigned i = 0; i < nfds; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		if (rc == -ECONNRESET) {
			client_free(a, c, n == 0 ? "disconnected" : "failed");
			return;
		}
		if (rc == -EPROTO) {
			a->st.proto_errors++;
			LOG_W("api: client %u (pid %d) broke the protocol: disconnected", c->id,
			      (int)c->pid);
			client_free(a, c, "disconnected for a protocol error");
			return;
		}
	}
}

/* A client with an empty object table (its chunks come as it grows). NULL: no memory. */
static struct client *client_alloc(struct fd_api *a)
{
	struct client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->chunk = calloc((a->d->cfg.client_max_objects + OBJ_CHUNK - 1) / OBJ_CHUNK,
			  sizeof(*c->chunk));
	if (!c->chunk) {
		free(c);
		return NULL;
	}
	c->free_head = OBJ_NONE;
	return c;
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct fd_api *a = w->data;

	(void)revents;
	for (int k = 0; k < 16; k++) {
		int fd = accept4(a->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ucred cr = { 0 };
		socklen_t len = sizeof(cr);
		struct client *c;

		if (fd < 0)
			return;
		if (a->nclients >= a->d->cfg.max_clients || !(c = client_alloc(a))) {
			a->st.refused_full++;
			LOG_W("api: refusing a client: %u connected (--max-clients %u)%s", a->nclients,
			      a->d->cfg.max_clients, a->nclients < a->d->cfg.max_clients ?
			      ": out of memory" : "");
			close(fd);
			continue;
		}
		getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len);
		c->a = a;
		c->fd = fd;
		c->db_fd = -1;
		c->ev_fd = -1;
		c->pid = cr.pid;
		c->pidfd = (int)syscall(SYS_pidfd_open, cr.pid, 0);
		c->uid = cr.uid;
		c->id = ++a->next_id;
		ev_io_init(&c->w, client_cb, fd, EV_READ);
		c->w.data = c;
		ev_io_start(loop, &c->w);
		c->next = a->clients;
		a->clients = c;
		a->nclients++;
		a->st.accepted++;
		LOG_D("api: client %u (pid %d uid %d) connected", c->id, (int)c->pid, (int)c->uid);
	}
}

/* ---- the loop's side ---- */

/* A CQ: the client armed it (its consumer side) and it holds completions: ring once,
 * and clear the flag for it. */
static void cq_sweep(struct fd_api *a, struct obj *o)
{
	struct fc_ring_hdr *rh = o->u.cq.ring;

	/* the client armed the CQ (its consumer side) and it holds completions or
	 * overflowed: ring once, and clear the flag for it */
	if (fc_ring_needs_wakeup(rh) &&
	    (__atomic_load_n(&rh->prod, __ATOMIC_ACQUIRE) !=
		     __atomic_load_n(&rh->cons, __ATOMIC_ACQUIRE) ||
	     (fc_ring_status(rh) & FC_RING_ST_OVERFLOW))) {
		uint64_t one = 1;

		fc_ring_set_need_wakeup(rh, 0);
		if (write(o->u.cq.evfd, &one, sizeof(one)) == sizeof(one))
			a->st.cq_wakeups++;
	}
}

/* An SRQ's ring: the WRs taken. */
static int srq_sweep(struct fd_api *a, struct client *c, struct obj *o, int going_to_sleep)
{
	struct fc_ring_hdr *rh = o->u.srq.ring;
	int rc;

	fc_ring_set_need_wakeup(rh, (uint32_t)going_to_sleep);
	rc = fc_rdma_srq_doorbell(fc_node_rdma(a->d->node), o->u.srq.srqn);
	if (rc == -EPROTO && !o->refs_broken) {
		o->refs_broken = 1;
		a->st.ring_broken++;
		LOG_W("api: client %u (pid %d) broke the ring of an SRQ: it is not read again",
		      c->id, (int)c->pid);
	}
	return rc > 0 ? rc : 0;
}

/* A QP's rings: the WRs taken. A QP with rings of its own is looked into every round (its
 * client rings the doorbell by the rings' flags); one in the arena while it is not ready
 * or its rings hold more than the engine took, else when its doorbell bit is set. */
static int qp_sweep(struct fd_api *a, struct client *c, struct obj *o, int going_to_sleep,
		    uint64_t now)
{
	struct fc_rdma *d = fc_node_rdma(a->d->node);
	int rc;

	if (o->u.qp.state == QP_CONNECTING) {
		sweep_add(o); /* ready later: looked into then */
		return 0;
	}
	if (o->u.qp.state != QP_READY || !o->u.qp.rings) {
		sweep_del(o); /* broken: never read again */
		return 0;
	}
	if (!o->u.qp.arena_unit) {
		struct fc_ring_hdr *sq = o->u.qp.type != FC_RDMA_QPT_XRC_TGT ? o->u.qp.rings : NULL;
		struct fc_ring_hdr *rq = o->u.qp.rq_off ?
			(void *)((uint8_t *)o->u.qp.rings + o->u.qp.rq_off) : NULL;

		/* the flag, then the rings read again (queue.h's ordering contract) */
		if (sq)
			fc_ring_set_need_wakeup(sq, (uint32_t)going_to_sleep);
		if (rq)
			fc_ring_set_need_wakeup(rq, (uint32_t)going_to_sleep);
	}
	rc = fc_rdma_qp_doorbell(d, o->u.qp.qpn, now);
	if (rc == -EPROTO) {
		o->u.qp.state = QP_BROKEN;
		sweep_del(o);
		a->st.ring_broken++;
		LOG_W("api: client %u (pid %d) broke the rings of QP %u: QP in error",
		      c->id, (int)c->pid, o->u.qp.qpn);
		return 0;
	}
	if (o->u.qp.arena_unit) {
		if (fc_rdma_qp_ring_pending(d, o->u.qp.qpn))
			sweep_add(o);
		else
			sweep_del(o);
	}
	return rc > 0 ? rc : 0;
}

/* The QPs whose doorbell bits the client set since the last round (falcon/queue.h: the
 * flag first, then the summary words, each word taken with an exchange). */
static int arena_sweep(struct fd_api *a, struct client *c, int going_to_sleep, uint64_t now)
{
	uint64_t *sum = fc_arena_summary(c->arena), *bm = fc_arena_bitmap(c->arena);
	int taken = 0;

	fc_arena_set_need_wakeup(c->arena, (uint32_t)going_to_sleep);
	for (uint32_t k = 0; k < FC_ARENA_SUMMARY; k++) {
		uint64_t v;

		if (!__atomic_load_n(&sum[k], __ATOMIC_SEQ_CST))
			continue;
		v = __atomic_exchange_n(&sum[k], 0, __ATOMIC_SEQ_CST);
		for (; v; v &= v - 1) {
			uint32_t w = k * 64u + (uint32_t)__builtin_ctzll(v);
			uint64_t bits = __atomic_exchange_n(&bm[w], 0, __ATOMIC_SEQ_CST);

			for (; bits; bits &= bits - 1) {
				uint32_t u = w * 64u + (uint32_t)__builtin_ctzll(bits);
				uint32_t slot = c->arena_slot[u];
				struct obj *o = slot ? obj_at(c, slot - 1) : NULL;

				if (!o || o->type != OBJ_QP || o->u.qp.arena_unit != u) {
					a->st.arena_stray_doorbells++; /* a bit for no QP: ignored */
					continue;
				}
				a->st.arena_doorbells++;
				taken += qp_sweep(a, c, o, going_to_sleep, now);
			}
		}
	}
	return taken;
}

int fd_api_prepare(struct fd_api *a, int going_to_sleep)
{
	uint64_t now = fd_now_ns();
	int taken = 0;

	for (struct client *c = a->clients; c; c = c->next) {
		if (c->arena)
			taken += arena_sweep(a, c, going_to_sleep, now);
		for (struct obj *o = c->sweep, *next; o; o = next) {
			next = o->snext; /* o may leave the list, never another */
			if (o->type == OBJ_CQ)
				cq_sweep(a, o);
			else if (o->type == OBJ_SRQ)
				taken += srq_sweep(a, c, o, going_to_sleep);
			else if (o->type == OBJ_QP)
				taken += qp_sweep(a, c, o, going_to_sleep, now);
		}
	}
	a->st.ring_wrs += (uint64_t)taken;
	events_from_engine(a); /* what this and the engine's work since the last time raised */
	return taken;
}

struct fd_api *fd_api_new(struct fd_daemon *d)
{
	struct fd_api *a = calloc(1, sizeof(*a));
	struct sockaddr_un un = { .sun_family = AF_UNIX };

	if (!a)
		return NULL;
	a->d = d;
	if (strlen(d->cfg.api_path) >= sizeof(un.sun_path)) {
		free(a);
		errno = ENAMETOOLONG;
		return NULL;
	}
	strcpy(un.sun_path, d->cfg.api_path);
	a->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a->fd < 0)
		goto fail;
	unlink(un.sun_path); /* a stale socket of a daemon that died */
	/* 0660: the daemon's user and group (systemd: root:falcon) are its clients */
	if (bind(a->fd, (struct sockaddr *)&un, sizeof(un)) < 0 || chmod(un.sun_path, 0660) < 0 ||
	    listen(a->fd, 64) < 0)
		goto fail;
	ev_io_init(&a->w, accept_cb, a->fd, EV_READ);
	a->w.data = a;
	ev_io_start(d->loop, &a->w);
	return a;
fail: {
	int e = errno;

	if (a->fd >= 0)
		close(a->fd);
	free(a);
	errno = e;
	return NULL;
}
}

void fd_api_free(struct fd_api *a)
{
	if (!a)
		return;
	while (a->clients)
		client_free(a, a->clients, "released at shutdown");
	ev_io_stop(a->d->loop, &a->w);
	close(a->fd);
	unlink(a->d->cfg.api_path);
	free(a);
}

uint32_t fd_api_nclients(const struct fd_api *a)
{
	return a->nclients;
}

size_t fd_api_json_clients(const struct fd_api *a, char *buf, size_t cap)
{
	struct fd_json j;

	fd_json_init(&j, buf, cap);
	fd_json_open(&j, NULL, '[');
	for (const struct client *c = a->clients; c; c = c->next) {
		uint32_t n[OBJ_TYPES] = { 0 };

		for (uint32_t i = 0; i < c->hiwat; i++)
			n[obj_at(c, i)->type]++;
		fd_json_open(&j, NULL, '{');
		fd_json_kv(&j, "id", "%u", c->id);
		fd_json_kv(&j, "pid", "%d", (int)c->pid);
		fd_json_kv(&j, "uid", "%d", (int)c->uid);
		for (int t = OBJ_PD; t <= OBJ_QP; t++)
			fd_json_kv(&j, obj_name[t], "%u", n[t]);
		fd_json_kv(&j, "msgs", "%llu", (unsigned long long)c->msgs);
		fd_json_kv(&j, "errors", "%llu", (unsigned long long)c->errors);
		fd_json_close(&j, '}');
	}
	fd_json_close(&j, ']');
	return fd_json_done(&j);
}

size_t fd_api_json_qps(const struct fd_api *a, char *buf, size_t cap)
{
	const struct fc_rdma *d = fc_node_rdma(a->d->node);
	static const char *const st[] = { "reset", "init", "rtr", "rts", "error" };
	static const char *const qpt_name[] = { "?", "rc", "ud", "xrc_send", "xrc_recv" };
	struct fd_json j;

	fd_json_init(&j, buf, cap);
	fd_json_open(&j, NULL, '[');
	for (const struct client *c = a->clients; c; c = c->next)
		for (uint32_t i = 0; i < c->hiwat; i++) {
			const struct obj *o = obj_at(c, i);

			if (o->type != OBJ_QP)
				continue;
			int s = o->u.qp.state == QP_READY ? fc_rdma_qp_state(d, o->u.qp.qpn) : -1;

			fd_json_open(&j, NULL, '{');
			fd_json_kv(&j, "client", "%u", c->id);
			fd_json_kv(&j, "qpn", "%u", o->u.qp.qpn);
			fd_json_kstr(&j, "type", qpt_name[o->u.qp.type < 5 ? o->u.qp.type : 0]);
			fd_json_kstr(&j, "made_by", o->u.qp.by_api ? "create_qp" : "connect");
			fd_json_kv(&j, "remote_qpn", "%u", o->u.qp.rqpn);
			fd_json_kstr(&j, "state", o->u.qp.state == QP_CONNECTING ? "connecting" :
				     s >= 0 && s <= 4 ? st[s] : "broken");
			if (o->u.qp.state == QP_READY) {
				fd_json_kv(&j, "sq_outstanding", "%d",
					   fc_rdma_qp_sq_outstanding(d, o->u.qp.qpn));
				fd_json_kv(&j, "rq_outstanding", "%d",
					   fc_rdma_qp_rq_outstanding(d, o->u.qp.qpn));
			}
			fd_json_close(&j, '}');
		}
	fd_json_close(&j, ']');
	return fd_json_done(&j);
}

size_t fd_api_json_mrs(const struct fd_api *a, char *buf, size_t cap)
{
	struct fd_json j;

	fd_json_init(&j, buf, cap);
	fd_json_open(&j, NULL, '[');
	for (const struct client *c = a->clients; c; c = c->next)
		for (uint32_t i = 0; i < c->hiwat; i++) {
			const struct obj *o = obj_at(c, i);

			if (o->type != OBJ_MR)
				continue;
			fd_json_open(&j, NULL, '{');
			fd_json_kv(&j, "client", "%u", c->id);
			fd_json_kv(&j, "iova", "\"%#llx\"", (unsigned long long)o->u.mr.iova);
			fd_json_kv(&j, "len", "%llu", (unsigned long long)o->u.mr.len);
			fd_json_kv(&j, "lkey", "\"%#x\"", o->u.mr.k.lkey);
			fd_json_kv(&j, "rkey", "\"%#x\"", o->u.mr.k.rkey);
			fd_json_kv(&j, "access", "\"%#x\"", o->u.mr.access);
			fd_json_kv(&j, "by_copy", "%s", o->u.mr.map ? "false" : "true");
			fd_json_close(&j, '}');
		}
	fd_json_close(&j, ']');
	return fd_json_done(&j);
}

void fd_api_json_limits(const struct fd_api *a, struct fd_json *j)
{
	const struct fd_cfg *cfg = &a->d->cfg;
	static const uint8_t types[] = { OBJ_QP, OBJ_CQ, OBJ_MR, OBJ_SRQ, OBJ_AH, OBJ_PD };
	char key[24];

	fd_json_open(j, "limits", '{');
	for (size_t i = 0; i < sizeof(types); i++) {
		uint32_t max, cmax;
		const char *opt, *copt;

		obj_limits(cfg, types[i], &max, &opt, &cmax, &copt);
		snprintf(key, sizeof(key), "max_%ss", obj_name[types[i]]);
		fd_json_kv(j, key, "%u", max);
		snprintf(key, sizeof(key), "%ss", obj_name[types[i]]);
		fd_json_kv(j, key, "%u", a->nobj[types[i]]);
	}
	fd_json_kv(j, "max_conns", "%u", cfg->max_conns);
	fd_json_kv(j, "conns", "%u", fc_node_conns_used(a->d->node)); /* closing ones too */
	fd_json_kv(j, "max_clients", "%u", cfg->max_clients);
	fd_json_kv(j, "clients", "%u", a->nclients);
	fd_json_kv(j, "client_max_objects", "%u", cfg->client_max_objects);
	fd_json_kv(j, "client_max_qps", "%u", cfg->client_max_qps);
	fd_json_kv(j, "client_max_mrs", "%u", cfg->client_max_mrs);
	fd_json_close(j, '}');
}

size_t fd_api_json_stats(const struct fd_api *a, char *buf, size_t cap)
{
	struct fd_json j;

	fd_json_init(&j, buf, cap);
	fd_json_open(&j, NULL, '{');
	fd_json_kv(&j, "clients", "%u", a->nclients);
	fd_json_kv(&j, "accepted", "%llu", (unsigned long long)a->st.accepted);
	fd_json_kv(&j, "refused_full", "%llu", (unsigned long long)a->st.refused_full);
	fd_json_kv(&j, "disconnects", "%llu", (unsigned long long)a->st.disconnects);
	fd_json_kv(&j, "msgs", "%llu", (unsigned long long)a->st.msgs);
	fd_json_kv(&j, "proto_errors", "%llu", (unsigned long long)a->st.proto_errors);
	fd_json_kv(&j, "bad_requests", "%llu", (unsigned long long)a->st.bad_requests);
	fd_json_kv(&j, "ring_broken", "%llu", (unsigned long long)a->st.ring_broken);
	fd_json_kv(&j, "ring_wrs", "%llu", (unsigned long long)a->st.ring_wrs);
	fd_json_kv(&j, "doorbells", "%llu", (unsigned long long)a->st.doorbells);
	fd_json_kv(&j, "mr_by_copy", "%llu", (unsigned long long)a->st.mr_by_copy);
	fd_json_kv(&j, "bind_failed", "%llu", (unsigned long long)a->st.bind_failed);
	fd_json_kv(&j, "cq_wakeups", "%llu", (unsigned long long)a->st.cq_wakeups);
	fd_json_kv(&j, "arena_doorbells", "%llu", (unsigned long long)a->st.arena_doorbells);
	fd_json_kv(&j, "arena_stray_doorbells", "%llu",
		   (unsigned long long)a->st.arena_stray_doorbells);
	fd_json_kv(&j, "async_events", "%llu", (unsigned long long)a->st.events);
	fd_json_kv(&j, "async_events_lost", "%llu", (unsigned long long)a->st.events_lost);
	fd_json_close(&j, '}');
	return fd_json_done(&j);
}
