/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/mpi/mpi_falcon.c - an MPI program for two ranks, run by tests/e2e/test_mpi.sh with
 * Open MPI's ofi MTL (and one-sided) forced onto the falcon libfabric provider:
 *   pingpong   rank 0 <-> rank 1, 8 B .. 1 MiB; every message's bytes checked on both
 *              sides (a pattern of size, iteration and offset); prints half round trip
 *              (us) and bandwidth (MB/s) per size
 *   allreduce  MPI_SUM of int64 vectors (1 .. 65536 elements) and MPI_MAX of a double,
 *              checked against the closed form; and an MPI_Sendrecv of each rank with
 *              itself
 *   rma        a window (MPI_Win_allocate): MPI_Put and MPI_Get under fence epochs,
 *              MPI_Fetch_and_op (MPI_SUM) and MPI_Accumulate under lock/unlock epochs,
 *              results checked on both ranks; both ranks on rank 0's window (its own
 *              for rank 0)
 * Usage: mpi_falcon [pingpong|allreduce|rma|all] [iters]. Prints "mpi-<part>: N passed,
 * M failed" from rank 0 per part; exits 1 when a check failed on any rank.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZE (1u << 20)

static int rank, nranks;

/* the counts of one part, summed over the ranks at its end */
static int pass_n, fail_n;

static void check(int ok, const char *what, long a, long b)
{
	if (ok) {
		pass_n++;
		return;
	}
	fail_n++;
	if (fail_n <= 10)
		fprintf(stderr, "rank %d: FAILED: %s (%ld, %ld)\n", rank, what, a, b);
}

static int part_done(const char *name)
{
	int loc[2] = { pass_n, fail_n }, tot[2];

	MPI_Reduce(loc, tot, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi-%s: %d passed, %d failed\n", name, tot[0], tot[1]);
	MPI_Bcast(tot, 2, MPI_INT, 0, MPI_COMM_WORLD);
	pass_n = fail_n = 0;
	fflush(stdout);
	return tot[1] == 0 ? 0 : 1;
}

static unsigned char pat(size_t size, int it, size_t off, int from)
{
	return (unsigned char)(size * 7 + (size_t)it * 131 + off * 13 + (size_t)from * 89 + (off >> 8));
}

static void fill(unsigned char *b, size_t size, int it, int from)
{
	for (size_t i = 0; i < size; i++)
		b[i] = pat(size, it, i, from);
}

/* the first offset that differs, or -1 */
static long verify(const unsigned char *b, size_t size, int it, int from)
{
	for (size_t i = 0; i < size; i++)
		if (b[i] != pat(size, it, i, from))
			return (long)i;
	return -1;
}

static int pingpong(int iters)
{
	static const size_t sizes[] = { 8, 64, 512, 4096, 16384, 65536, 262144, 1048576 };
	unsigned char *sb = malloc(MAX_SIZE), *rb = malloc(MAX_SIZE);
	int peer = 1 - rank;

	if (!sb || !rb) {
		fprintf(stderr, "rank %d: out of memory\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (rank == 0)
		printf("%-9s %8s %12s %12s\n", "bytes", "iters", "usec/xfer", "MB/s");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t size = sizes[s];
		int n = size >= 262144 ? (iters + 9) / 10 : iters;
		long bad_at = -1;
		double t0, t;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int it = 0; it < n; it++) {
			MPI_Status st;
			int cnt = -1;

			if (rank == 0) {
				fill(sb, size, it, 0);
				MPI_Send(sb, (int)size, MPI_BYTE, peer, it & 0x7fff, MPI_COMM_WORLD);
				memset(rb, 0, size);
				MPI_Recv(rb, (int)size, MPI_BYTE, peer, it & 0x7fff, MPI_COMM_WORLD, &st);
				MPI_Get_count(&st, MPI_BYTE, &cnt);
				check(cnt == (int)size && st.MPI_SOURCE == peer, "pingpong reply count/source",
				      cnt, st.MPI_SOURCE);
				if ((bad_at = verify(rb, size, it, 1)) >= 0)
					break;
			} else {
				memset(rb, 0, size);
				MPI_Recv(rb, (int)size, MPI_BYTE, peer, it & 0x7fff, MPI_COMM_WORLD, &st);
				MPI_Get_count(&st, MPI_BYTE, &cnt);
				check(cnt == (int)size && st.MPI_TAG == (it & 0x7fff), "pingpong count/tag",
				      cnt, st.MPI_TAG);
				if ((bad_at = verify(rb, size, it, 0)) >= 0)
					break;
				fill(sb, size, it, 1);
				MPI_Send(sb, (int)size, MPI_BYTE, peer, it & 0x7fff, MPI_COMM_WORLD);
			}
		}
		t = MPI_Wtime() - t0;
		check(bad_at < 0, "pingpong data", (long)size, bad_at);
		if (bad_at >= 0) /* the two sides are out of step now: stop here */
			break;
		if (rank == 0)
			printf("%-9zu %8d %12.2f %12.2f\n", size, n, t * 1e6 / (2.0 * n),
			       (double)size * 2.0 * n / t / 1e6);
	}
	free(sb);
	free(rb);
	return part_done("pingpong");
}

static int allreduce(void)
{
	static const int counts[] = { 1, 7, 1024, 65536 };
	int64_t *in = malloc(65536 * sizeof(*in)), *out = malloc(65536 * sizeof(*out));

	if (!in || !out)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		int n = counts[c], bad = -1;

		for (int i = 0; i < n; i++) {
			in[i] = (int64_t)(rank + 1) * 1000003 + i;
			out[i] = -1;
		}
		MPI_Allreduce(in, out, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
		/* sum over r of (r+1)*1000003 + i */
		for (int i = 0; i < n && bad < 0; i++) {
			int64_t want = (int64_t)nranks * (nranks + 1) / 2 * 1000003 + (int64_t)nranks * i;

			if (out[i] != want)
				bad = i;
		}
		check(bad < 0, "allreduce sum", n, bad);
	}
	{
		double v = 1.5 * (rank + 1), m = 0;

		MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		check(m == 1.5 * nranks, "allreduce max", (long)(m * 10), (long)(15 * nranks));
	}
	/* a message to myself (pml cm sends it through the provider too) */
	{
		int bad = -1;

		for (int i = 0; i < 1024; i++) {
			in[i] = (int64_t)rank * 77 + i;
			out[i] = -1;
		}
		MPI_Sendrecv(in, 1024, MPI_INT64_T, rank, 99, out, 1024, MPI_INT64_T, rank, 99,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (int i = 0; i < 1024 && bad < 0; i++)
			if (out[i] != (int64_t)rank * 77 + i)
				bad = i;
		check(bad < 0, "MPI_Sendrecv to myself", bad, 0);
	}
	free(in);
	free(out);
	return part_done("allreduce");
}

#define WIN_N 4096 /* int64 elements in each rank's window */

static int rma(void)
{
	int64_t *base = NULL, *buf = malloc(WIN_N * sizeof(int64_t));
	int peer = 1 - rank, bad;
	MPI_Win win;

	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_Win_allocate(WIN_N * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
			 &base, &win);
	for (int i = 0; i < WIN_N; i++)
		base[i] = -1;

	/* Put under fence: each rank writes its pattern into the peer's window */
	MPI_Win_fence(0, win);
	for (int i = 0; i < WIN_N; i++)
		buf[i] = (int64_t)rank * 1000000 + i * 3;
	MPI_Put(buf, WIN_N, MPI_INT64_T, peer, 0, WIN_N, MPI_INT64_T, win);
	MPI_Win_fence(0, win);
	bad = -1;
	for (int i = 0; i < WIN_N && bad < 0; i++)
		if (base[i] != (int64_t)peer * 1000000 + i * 3)
			bad = i;
	check(bad < 0, "MPI_Put (fence): the peer's pattern in my window", bad, bad < 0 ? 0 : (long)base[bad]);

	/* Get under fence: read back the peer's window (which holds my pattern) */
	for (int i = 0; i < WIN_N; i++)
		buf[i] = -7;
	MPI_Get(buf, WIN_N, MPI_INT64_T, peer, 0, WIN_N, MPI_INT64_T, win);
	MPI_Win_fence(0, win);
	bad = -1;
	for (int i = 0; i < WIN_N && bad < 0; i++)
		if (buf[i] != (int64_t)rank * 1000000 + i * 3)
			bad = i;
	check(bad < 0, "MPI_Get (fence): my pattern from the peer's window", bad, bad < 0 ? 0 : (long)buf[bad]);

	/* a strided Get of a few elements at an offset */
	{
		int64_t few[5] = { 0 };

		MPI_Get(few, 5, MPI_INT64_T, peer, 100, 5, MPI_INT64_T, win);
		MPI_Win_fence(0, win);
		bad = -1;
		for (int i = 0; i < 5 && bad < 0; i++)
			if (few[i] != (int64_t)rank * 1000000 + (100 + i) * 3)
				bad = i;
		check(bad < 0, "MPI_Get at a displacement", bad, 0);
	}

	/* Fetch_and_op (SUM), 50 times from each rank, on element 0 of rank 0's window
	 * (rank 0's own), under exclusive locks: the fetched values rise and the final
	 * value is the start plus the sum of the increments */
	MPI_Win_fence(0, win);
	base[0] = 5;
	MPI_Win_fence(0, win);
	{
		int64_t inc = rank + 1, old = 0, prev = -1;
		int monotone = 1, target = 0;

		for (int i = 0; i < 50; i++) {
			MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
			MPI_Fetch_and_op(&inc, &old, MPI_INT64_T, target, 0, MPI_SUM, win);
			MPI_Win_unlock(target, win);
			if (old <= prev || old < 5)
				monotone = 0;
			prev = old;
		}
		check(monotone, "MPI_Fetch_and_op: fetched values rise", (long)prev, 0);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	{
		int64_t final = 0, want = 5 + 50 * (int64_t)(nranks * (nranks + 1) / 2);
		int target = 0;

		MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
		MPI_Get(&final, 1, MPI_INT64_T, target, 0, 1, MPI_INT64_T, win);
		MPI_Win_unlock(target, win);
		check(final == want, "MPI_Fetch_and_op: the sum at the target", (long)final, (long)want);
	}

	/* Accumulate (SUM) of a vector into the peer's window under a shared lock, then read
	 * back (after a flush, in the same epoch) */
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < 256; i++)
		buf[i] = i + 1;
	MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
	MPI_Accumulate(buf, 256, MPI_INT64_T, peer, 1000, 256, MPI_INT64_T, MPI_SUM, win);
	MPI_Win_flush(peer, win);
	for (int i = 0; i < 256; i++)
		buf[256 + i] = -1;
	MPI_Get(buf + 256, 256, MPI_INT64_T, peer, 1000, 256, MPI_INT64_T, win);
	MPI_Win_unlock(peer, win);
	bad = -1;
	/* the peer's window holds my pattern (my Put) plus the increments */
	for (int i = 0; i < 256 && bad < 0; i++)
		if (buf[256 + i] != (int64_t)rank * 1000000 + (1000 + i) * 3 + i + 1)
			bad = i;
	check(bad < 0, "MPI_Accumulate (lock): the sums in the peer's window", bad, 0);
	MPI_Barrier(MPI_COMM_WORLD);

	MPI_Win_free(&win);
	free(buf);
	return part_done("rma");
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	int iters = argc > 2 ? atoi(argv[2]) : 1000, rc = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks != 2 || iters <= 0 || iters > 1000000) {
		if (rank == 0)
			fprintf(stderr, "usage: mpirun -np 2 mpi_falcon [pingpong|allreduce|rma|all] [iters]\n");
		MPI_Finalize();
		return 2;
	}
	if (!strcmp(what, "pingpong") || !strcmp(what, "all"))
		rc |= pingpong(iters);
	if (!strcmp(what, "allreduce") || !strcmp(what, "all"))
		rc |= allreduce();
	if (!strcmp(what, "rma") || !strcmp(what, "all"))
		rc |= rma();
	MPI_Finalize();
	return rc;
}
