/* SPDX-License-Identifier: Apache-2.0 */
/*
 * txn_test.h - for tests only: switches that break one forward-progress rule of the
 * transaction sublayer each (spec 8.2.1), so that a test can show the deadlock the rule
 * prevents. Nothing outside tests/ includes this header.
 */
#ifndef FC_TXN_TEST_H
#define FC_TXN_TEST_H

#include "txn.h"

#define FC_TXN_DBG_SHARED_RX 0x1u  /* CR#1 off: network requests draw from the ULP Rx region */
#define FC_TXN_DBG_SHARED_TXQ 0x2u /* CR#2 off: Pull Data queued behind the requests */
#define FC_TXN_DBG_NO_RED 0x4u     /* CR#3 off: no HoL red zone */
#define FC_TXN_DBG_LIFO 0x8u       /* UR off: requests handed to the PDL newest first */

/* fc_txn_engine_new with FC_TXN_DBG_* bits set. */
struct fc_txn_engine *fc_txn_engine_new_dbg(const struct fc_txn_engine_cfg *cfg, uint32_t dbg);

#endif
