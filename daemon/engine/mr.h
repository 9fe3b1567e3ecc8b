/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mr.h - memory protection of the RDMA ULP: protection domains, memory regions over
 * caller-supplied memory, L_Key/R_Key checks, remote invalidation (SEND with Invalidate,
 * RDMA spec 8.3.8), and the table that turns a failed check into the InfiniBand
 * completion status and NAK of the operation (RDMA spec 6.3, 6.9; IB as rxe does it).
 *
 * The engine never allocates region memory: the daemon registers ranges of the clients'
 * shared-memory mappings, and a successful check returns a pointer into them.
 *
 * Key layout (both L_Key and R_Key of a region; 32 bits):
 *
 *   31                         8+B  8+B-1          8   7            0
 *   +-----------------------------+------------------+--------------+
 *   | random (24-B bits)          | slot index (B)   | generation   |
 *   +-----------------------------+------------------+--------------+
 *
 *   B = bits needed to number the table's capacity (0-16). The random bits come from
 *   the caller's callback at each registration, drawn separately for the L_Key and the
 *   R_Key, so a peer that learns one key (an STETH carries the L_Key on the wire) learns
 *   nothing of the other. The generation is per slot and changes on every registration
 *   of the slot, so the keys of the previous 255 registrations of a slot never match;
 *   an older key matches only if all 24-B random bits were redrawn equal as well.
 *   Freed slots are reused oldest-first (FIFO), which makes a reuse as late as possible.
 *   Lookup is O(1): the index bits select the slot, and the whole key must equal the
 *   one stored there.
 *
 * Not thread-safe: one table belongs to one engine thread.
 */
#ifndef FC_MR_H
#define FC_MR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Errors and the completion statuses they map to                            */
/* ------------------------------------------------------------------------ */

/*
 * Outcomes of the protection and execution checks of an RDMA operation, returned
 * negated (-FC_RDMA_EKEY). They start above the wire codec errors (wire_err.h) and the
 * errno range, so that callers can mix them with -errno and -FC_WIRE_E* codes.
 * Argument errors of the table API itself (bad PD handle at registration, table full)
 * are plain -errno (-EINVAL, -ENOSPC, -EBUSY).
 */
enum fc_rdma_err {
	FC_RDMA_EKEY = 4352, /* key names no valid region: unknown, stale, deregistered,
				invalidated */
	FC_RDMA_EPD,         /* region belongs to another protection domain */
	FC_RDMA_EBOUNDS,     /* [va, va+len) not inside the region, incl. va+len overflow */
	FC_RDMA_EACCESS,     /* region lacks a permission the access needs */
	FC_RDMA_EALIGN,      /* atomic on an address that is not 8-byte aligned (RFC 7306
				5.1.1, 5.1.2) */
	FC_RDMA_ELEN,        /* message longer than the receive WQE's buffers, or a local
				length rule (atomic sink != 8 bytes, message > 2^31) */
	FC_RDMA_ERNR,        /* no receive WQE posted (receiver not ready) */
	FC_RDMA_ERR_END,
};

/* Work completion status, numbered as ibverbs' enum ibv_wc_status so that the client
 * library can hand them out unchanged. FC_WC_NONE: that side completes nothing. */
enum fc_wc_status {
	FC_WC_SUCCESS = 0,
	FC_WC_LOC_LEN_ERR = 1,
	FC_WC_LOC_QP_OP_ERR = 2,
	FC_WC_LOC_PROT_ERR = 4,
	FC_WC_WR_FLUSH_ERR = 5,
	FC_WC_LOC_ACCESS_ERR = 8,
	FC_WC_REM_INV_REQ_ERR = 9,
	FC_WC_REM_ACCESS_ERR = 10,
	FC_WC_REM_OP_ERR = 11,
	FC_WC_RETRY_EXC_ERR = 12,
	FC_WC_RNR_RETRY_EXC_ERR = 13,
	FC_WC_GENERAL_ERR = 21,
	FC_WC_NONE = 0xFF,
};

/* What the responder answers when a check fails. Codes 1-3 are the InfiniBand AETH NAK
 * codes (IB 9.4: Invalid Request, Remote Access Error, Remote Operational Error); the
 * RDMA ULP hands them to Falcon as the 8-bit ULP NACK code (Falcon spec 7.8), with the
 * Falcon NACK code "complete in error" or "non-recoverable" by the QP's error mode
 * (RDMA spec 6.3). RNR is the Falcon NACK code FC_NACK_RNR itself (ULP code 0); the
 * initiator retries, and completes with RNR_RETRY_EXC_ERR only when retries run out. */
enum fc_rdma_nak {
	FC_RDMA_NAK_NONE = 0,
	FC_RDMA_NAK_INV_REQ = 1,
	FC_RDMA_NAK_REM_ACCESS = 2,
	FC_RDMA_NAK_REM_OP = 3,
	FC_RDMA_NAK_RNR = 0x20,
};

/* Where the failing check ran. */
enum fc_rdma_site {
	FC_RDMA_SITE_LOCAL,      /* requester, L_Key of its own WQE (gather list of SEND /
				    WRITE, sink of READ / atomic) */
	FC_RDMA_SITE_RKEY,       /* responder, R_Key + VA of a RETH or AtomicETH */
	FC_RDMA_SITE_RECV,       /* responder, placing a SEND into a receive WQE (its
				    L_Keys, its length) or finding none */
	FC_RDMA_SITE_INVALIDATE, /* responder, the IETH R_Key of a SEND with Invalidate */
};

/* The effect of one failed check. */
struct fc_rdma_err_effect {
	uint8_t nak;         /* enum fc_rdma_nak */
	uint8_t req_status;  /* enum fc_wc_status of the requester's send WQE */
	uint8_t resp_status; /* enum fc_wc_status of the responder's receive WQE */
};

/*
 * The table (IB semantics; rxe's responder as the reference implementation):
 *
 *   site        error                        NAK          requester WC     responder WC
 *   LOCAL       EKEY EPD EBOUNDS EACCESS     -            LOC_PROT_ERR     -
 *   LOCAL       ELEN                         -            LOC_LEN_ERR      -
 *   RKEY        EKEY EPD EBOUNDS EACCESS     REM_ACCESS   REM_ACCESS_ERR   -
 *   RKEY        EALIGN                       INV_REQ      REM_INV_REQ_ERR  -
 *   RECV        EKEY EPD EBOUNDS EACCESS     REM_OP       REM_OP_ERR       LOC_PROT_ERR
 *   RECV        ELEN                         INV_REQ      REM_INV_REQ_ERR  LOC_LEN_ERR
 *   RECV        ERNR                         RNR          RNR_RETRY_EXC_ERR -
 *   INVALIDATE  EKEY EPD EACCESS             INV_REQ      REM_INV_REQ_ERR  REM_INV_REQ_ERR
 *
 * ("-": NAK_NONE / WC_NONE.) An R_Key failure of a WRITE with Immediate consumes no
 * receive WQE. Returns 0 and fills *out, or -EINVAL for an err/site pair that cannot
 * happen (e.g. EALIGN at RECV).
 */
int fc_rdma_err_effect(int err, enum fc_rdma_site site, struct fc_rdma_err_effect *out);

/* "EKEY", "EBOUNDS" ... for FC_RDMA_E* (negative or positive); "?" otherwise. */
const char *fc_rdma_strerror(int err);

/* "SUCCESS", "REM_ACCESS_ERR" ..., as the ibverbs names without IBV_WC_; "?" if unknown. */
const char *fc_wc_status_name(int status);

/* ------------------------------------------------------------------------ */
/* Protection domains and memory regions                                     */
/* ------------------------------------------------------------------------ */

/* Access flags of a region, IB verbs semantics. Local read is always allowed. */
enum fc_mr_access {
	FC_MR_LOCAL_WRITE = 1u << 0,
	FC_MR_REMOTE_READ = 1u << 1,
	FC_MR_REMOTE_WRITE = 1u << 2,
	FC_MR_REMOTE_ATOMIC = 1u << 3,
	FC_MR_REMOTE_INVALIDATE = 1u << 4, /* a peer may invalidate it (SEND with Inv) */
};
#define FC_MR_ACCESS_ALL 0x1Fu

#define FC_MR_CAP_MAX (1u << 16) /* regions per table: >= 8 random key bits remain */
#define FC_PD_CAP_MAX (1u << 16)

struct fc_mr_table;

/* Random source for keys: returns 32 random bits (only the top 24-B are used). */
typedef uint32_t (*fc_mr_rand_fn)(void *ctx);

/*
 * A table for at most mr_cap regions and pd_cap protection domains (1..FC_MR_CAP_MAX,
 * 1..FC_PD_CAP_MAX). rand is called at each registration; the engine has no randomness
 * of its own. Returns NULL with errno EINVAL (bad capacity, rand NULL) or ENOMEM.
 */
struct fc_mr_table *fc_mr_table_new(uint32_t mr_cap, uint32_t pd_cap, fc_mr_rand_fn rand,
				    void *rand_ctx);
/* Frees the table (not the registered memory). NULL is a no-op. */
void fc_mr_table_free(struct fc_mr_table *t);

/* Allocate a protection domain; *pd gets its handle ([31:16] generation, [15:0] slot, so a
 * freed handle stays invalid until the slot has been reused 65536 times). Returns 0 or
 * -ENOSPC (all pd_cap in use). */
int fc_pd_alloc(struct fc_mr_table *t, uint32_t *pd);
/* Free a protection domain. Returns 0, -EINVAL (not an allocated PD), or -EBUSY (regions
 * are still registered in it, as ibv_dealloc_pd). */
int fc_pd_free(struct fc_mr_table *t, uint32_t pd);

struct fc_mr_keys {
	uint32_t lkey;
	uint32_t rkey;
};

/*
 * Memory the engine cannot reach by pointer (falcond: a client's memory that is not shared
 * with the daemon, reached with process_vm_readv/writev). A region registered with such
 * ops (fc_mr_reg_ext) hands out host addresses of the owner's address space, which the
 * engine never dereferences: it moves bytes with these. Each returns 0, or a negative
 * errno when the memory cannot be reached (the owner unmapped it or is gone): the access
 * then fails as a protection error (-FC_RDMA_EACCESS at the call site).
 */
struct fc_mr_mem_ops {
	int (*read)(void *ctx, const void *src, void *dst, size_t n);
	int (*write)(void *ctx, void *dst, const void *src, size_t n);
};

/* Where a successful check found the bytes: host, and how to reach it (ops NULL: host is
 * a pointer the engine may use). */
struct fc_mr_loc {
	void *host;
	const struct fc_mr_mem_ops *ops;
	void *ctx;
};

/* Copy n bytes out of / into the registered memory at l->host + off. 0 or
 * -FC_RDMA_EACCESS (indirect memory that could not be reached). */
static inline int fc_mr_read(const struct fc_mr_loc *l, uint64_t off, void *dst, size_t n)
{
	if (!l->ops) {
		memcpy(dst, (const uint8_t *)l->host + off, n);
		return 0;
	}
	return l->ops->read(l->ctx, (const uint8_t *)l->host + off, dst, n) ? -FC_RDMA_EACCESS : 0;
}

static inline int fc_mr_write(const struct fc_mr_loc *l, uint64_t off, const void *src, size_t n)
{
	if (!l->ops) {
		memcpy((uint8_t *)l->host + off, src, n);
		return 0;
	}
	return l->ops->write(l->ctx, (uint8_t *)l->host + off, src, n) ? -FC_RDMA_EACCESS : 0;
}

/*
 * Register len bytes at host address addr, seen by peers at virtual address iova, in
 * protection domain pd, with access (enum fc_mr_access bits). Both keys are fresh (see
 * the layout above). As in IB verbs, REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE.
 * REMOTE_ATOMIC also needs addr and iova congruent modulo 8, so that an 8-aligned
 * iova is an 8-aligned host address and the atomic can run on it (atomic.h).
 * Returns 0 and fills *keys, or
 *   -EINVAL  pd not allocated; unknown access bits; REMOTE_WRITE/ATOMIC without
 *            LOCAL_WRITE; addr NULL with len > 0; addr+len or iova+len overflows;
 *            REMOTE_ATOMIC with addr and iova not congruent mod 8;
 *   -ENOSPC  all mr_cap slots in use.
 */
int fc_mr_reg(struct fc_mr_table *t, uint32_t pd, void *addr, uint64_t iova, uint64_t len,
	      uint32_t access, struct fc_mr_keys *keys);
/* The same for memory reached through ops (with ctx; NULL ops is fc_mr_reg): addr is an
 * address in the owner's space, never dereferenced here. Same returns. */
int fc_mr_reg_ext(struct fc_mr_table *t, uint32_t pd, void *addr, uint64_t iova, uint64_t len,
		  uint32_t access, const struct fc_mr_mem_ops *ops, void *ctx,
		  struct fc_mr_keys *keys);

/* Deregister the region whose L_Key is lkey, in pd (also after an invalidation). Its
 * keys fail from now on. Returns 0, or -EINVAL (no region with that L_Key in pd). */
int fc_mr_dereg(struct fc_mr_table *t, uint32_t pd, uint32_t lkey);

/*
 * Responder check of an R_Key (RETH, AtomicETH): may a peer whose QP is in pd access
 * [iova, iova+len) with access (REMOTE_READ, REMOTE_WRITE or REMOTE_ATOMIC)? On success
 * *host points at iova's byte in the registered memory. Checks in this order, returning
 *   -FC_RDMA_EKEY     rkey names no valid region (index out of range, stale generation
 *                     or random part, deregistered, invalidated);
 *   -FC_RDMA_EPD      the region is in another PD;
 *   -FC_RDMA_EACCESS  the region lacks one of the access bits;
 *   -FC_RDMA_EBOUNDS  the range is not inside the region (incl. iova+len > 2^64).
 * len 0 is checked like any other length (iova within [start, end]); IB C9-88 lets the
 * responder skip the check of a zero-length READ/WRITE, which is the caller's choice.
 * *host is written only on success. For a region of fc_mr_reg_ext with ops, *host is an
 * address of its owner's space: only the _loc forms below may be used to move bytes.
 */
int fc_mr_check_remote(const struct fc_mr_table *t, uint32_t pd, uint32_t rkey,
		       uint64_t iova, uint64_t len, uint32_t access, void **host);

/* The same for an L_Key, for local gather (access 0: local read is always allowed) and
 * scatter (FC_MR_LOCAL_WRITE) of the requester's or a receive WQE's lists. Same errors. */
int fc_mr_check_local(const struct fc_mr_table *t, uint32_t pd, uint32_t lkey,
		      uint64_t iova, uint64_t len, uint32_t access, void **host);
/* The same two checks filling *loc: what a caller that moves bytes uses (fc_mr_read /
 * fc_mr_write), since the host of an indirect region is no pointer of ours. */
int fc_mr_check_remote_loc(const struct fc_mr_table *t, uint32_t pd, uint32_t rkey,
			   uint64_t iova, uint64_t len, uint32_t access, struct fc_mr_loc *loc);
int fc_mr_check_local_loc(const struct fc_mr_table *t, uint32_t pd, uint32_t lkey,
			  uint64_t iova, uint64_t len, uint32_t access, struct fc_mr_loc *loc);

/*
 * Invalidate the region of rkey on behalf of a peer's SEND with Invalidate (IETH,
 * RDMA spec 8.3.8) arriving on a QP in pd. As an IB memory region going from Valid to
 * Free, both its keys fail afterwards; its slot stays held until fc_mr_dereg.
 * Returns 0, or
 *   -FC_RDMA_EKEY     rkey names no valid region (incl. one already invalidated);
 *   -FC_RDMA_EPD      the region is in another PD;
 *   -FC_RDMA_EACCESS  the region lacks FC_MR_REMOTE_INVALIDATE.
 */
int fc_mr_invalidate(struct fc_mr_table *t, uint32_t pd, uint32_t rkey);

/* A region as registered. */
struct fc_mr_info {
	void *addr;
	uint64_t iova;
	uint64_t len;
	uint32_t pd;
	uint32_t access;
	uint32_t lkey;
	uint32_t rkey;
	bool valid; /* false once invalidated */
};

/* Look up the region of lkey in pd (valid or invalidated). Returns 0, or -EINVAL. */
int fc_mr_query(const struct fc_mr_table *t, uint32_t pd, uint32_t lkey,
		struct fc_mr_info *out);

/* Regions registered (valid or invalidated). */
uint32_t fc_mr_count(const struct fc_mr_table *t);
/* The capacities the table was made with (fc_mr_table_new's mr_cap, pd_cap). */
uint32_t fc_mr_table_mr_cap(const struct fc_mr_table *t);
uint32_t fc_mr_table_pd_cap(const struct fc_mr_table *t);

/* A number, never 0, that changes whenever a check that passed might fail if made again
 * (a region deregistered or invalidated, a PD freed); registrations leave it. A caller
 * that checked keys at generation g need not check them again while it is still g. */
uint64_t fc_mr_table_gen(const struct fc_mr_table *t);

#endif
