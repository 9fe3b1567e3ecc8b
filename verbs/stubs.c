/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verbs/stubs.c - the rest of rdma-core 44's libibverbs.so.1 ABI (verbs/libibverbs.map):
 * symbols that the rdma-core libraries a program loads beside libibverbs bind at load time
 * (librdmacm, and the providers libmlx5 / libefa that perftest links, whose constructors
 * register their drivers), and public calls falcon has nothing for. None of them reaches
 * falcon: commands to a kernel device fail with EOPNOTSUPP (-1 and errno for those that say
 * so), imports (of another process's objects) return NULL with errno EOPNOTSUPP, a driver's
 * registration is taken and ignored (falcon0 is the only device; providers never open).
 * Their C types are the providers' business: each is defined here without its parameters,
 * which the x86-64 and aarch64 calling conventions let a caller pass and ignore.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#define FV_API __attribute__((visibility("default")))

/* an errno-returning command: EOPNOTSUPP */
#define STUB_ERR(name) \
	int name(void); \
	FV_API int name(void) { errno = EOPNOTSUPP; return EOPNOTSUPP; }
/* a call that returns -1 and sets errno */
#define STUB_NEG(name) \
	int name(void); \
	FV_API int name(void) { errno = EOPNOTSUPP; return -1; }
/* a constructor: NULL and errno */
#define STUB_NULL(name) \
	void *name(void); \
	FV_API void *name(void) { errno = EOPNOTSUPP; return NULL; }
/* nothing to do (a driver registering, a copy between kernel and user structs, a log) */
#define STUB_NONE(name) \
	int name(void); \
	FV_API int name(void) { return 0; }

/* libibverbs' own flag that providers read */
extern bool verbs_allow_disassociate_destroy;
FV_API bool verbs_allow_disassociate_destroy;

STUB_ERR(execute_ioctl)
STUB_ERR(ibv_cmd_advise_mr)
STUB_ERR(ibv_cmd_alloc_dm)
STUB_ERR(ibv_cmd_alloc_mw)
STUB_ERR(ibv_cmd_alloc_pd)
STUB_ERR(ibv_cmd_attach_mcast)
STUB_ERR(ibv_cmd_close_xrcd)
STUB_ERR(ibv_cmd_create_ah)
STUB_ERR(ibv_cmd_create_counters)
STUB_ERR(ibv_cmd_create_cq)
STUB_ERR(ibv_cmd_create_cq_ex)
STUB_ERR(ibv_cmd_create_flow)
STUB_ERR(ibv_cmd_create_flow_action_esp)
STUB_ERR(ibv_cmd_create_qp)
STUB_ERR(ibv_cmd_create_qp_ex)
STUB_ERR(ibv_cmd_create_qp_ex2)
STUB_ERR(ibv_cmd_create_rwq_ind_table)
STUB_ERR(ibv_cmd_create_srq)
STUB_ERR(ibv_cmd_create_srq_ex)
STUB_ERR(ibv_cmd_create_wq)
STUB_ERR(ibv_cmd_dealloc_mw)
STUB_ERR(ibv_cmd_dealloc_pd)
STUB_ERR(ibv_cmd_dereg_mr)
STUB_ERR(ibv_cmd_destroy_ah)
STUB_ERR(ibv_cmd_destroy_counters)
STUB_ERR(ibv_cmd_destroy_cq)
STUB_ERR(ibv_cmd_destroy_flow)
STUB_ERR(ibv_cmd_destroy_flow_action)
STUB_ERR(ibv_cmd_destroy_qp)
STUB_ERR(ibv_cmd_destroy_rwq_ind_table)
STUB_ERR(ibv_cmd_destroy_srq)
STUB_ERR(ibv_cmd_destroy_wq)
STUB_ERR(ibv_cmd_detach_mcast)
STUB_ERR(ibv_cmd_free_dm)
STUB_ERR(ibv_cmd_get_context)
STUB_ERR(ibv_cmd_modify_cq)
STUB_ERR(ibv_cmd_modify_flow_action_esp)
STUB_ERR(ibv_cmd_modify_qp)
STUB_ERR(ibv_cmd_modify_qp_ex)
STUB_ERR(ibv_cmd_modify_srq)
STUB_ERR(ibv_cmd_modify_wq)
STUB_ERR(ibv_cmd_open_qp)
STUB_ERR(ibv_cmd_open_xrcd)
STUB_ERR(ibv_cmd_poll_cq)
STUB_ERR(ibv_cmd_post_recv)
STUB_ERR(ibv_cmd_post_send)
STUB_ERR(ibv_cmd_post_srq_recv)
STUB_ERR(ibv_cmd_query_context)
STUB_ERR(ibv_cmd_query_device_any)
STUB_ERR(ibv_cmd_query_mr)
STUB_ERR(ibv_cmd_query_port)
STUB_ERR(ibv_cmd_query_qp)
STUB_ERR(ibv_cmd_query_srq)
STUB_ERR(ibv_cmd_read_counters)
STUB_ERR(ibv_cmd_reg_dm_mr)
STUB_ERR(ibv_cmd_reg_dmabuf_mr)
STUB_ERR(ibv_cmd_reg_mr)
STUB_ERR(ibv_cmd_req_notify_cq)
STUB_ERR(ibv_cmd_rereg_mr)
STUB_ERR(ibv_cmd_resize_cq)
STUB_ERR(ibv_resolve_eth_l2_from_gid)
STUB_NEG(ibv_read_ibdev_sysfs_file)
STUB_NULL(_verbs_init_and_alloc_context)
STUB_NULL(verbs_open_device)
STUB_NULL(ibv_import_device)
STUB_NULL(ibv_import_dm)
STUB_NULL(ibv_import_mr)
STUB_NULL(ibv_import_pd)
STUB_NONE(__verbs_log)
STUB_NONE(verbs_register_driver_34)
STUB_NONE(verbs_set_ops)
STUB_NONE(verbs_uninit_context)
STUB_NONE(verbs_init_cq)
STUB_NONE(ibv_copy_ah_attr_from_kern)
STUB_NONE(ibv_copy_path_rec_from_kern)
STUB_NONE(ibv_copy_path_rec_to_kern)
STUB_NONE(ibv_copy_qp_attr_from_kern)
STUB_NONE(ibv_unimport_dm)
STUB_NONE(ibv_unimport_mr)
STUB_NONE(ibv_unimport_pd)
STUB_NONE(__ioctl_final_num_attrs)
