/*
** torus_mesh.h: a two-axis device mesh (data x model) laid over a torus group's axes as
** jax.experimental.mesh_utils.create_device_mesh lays a mesh over a TPU slice
** (jax-ml/jax jax/_src/mesh_utils.py, _create_device_mesh_for_nd_torus and, where no whole axes
** fit, _create_device_mesh_for_nd_torus_splitting_axes): the model axis (the more
** network-intensive, placed first) takes whole torus axes whose lengths multiply to its size,
** the most axes that fit (three, then two, then one), the first such set in index order; where
** none does, it takes a part of some axes' chips, the part with the most whole axes, then the
** lexicographically largest per-axis split. On an axis it shares with the data axis it takes the
** inner, contiguous chips (a sub-line of `inner` neighbours); the data axis takes every axis's
** rest. So every collective over a mesh axis runs along torus lines: a whole axis keeps its
** wraparound, a model sub-line of a longer axis is a line without it (its neighbours one link
** apart), a data axis's part of a split axis a ring or line whose neighbours are `inner` links
** apart (shared with the other data lines: the placement cannot do better there).
*/
#ifndef PODSIM_TORUS_MESH_H
#define PODSIM_TORUS_MESH_H

#define SIM_TORUS_MESH_MAX_DIMS 8

typedef struct sim_torus_mesh {
  int ndims;                 /* the torus's axes (axis 0 fastest in its rank numbers) */
  int dims[SIM_TORUS_MESH_MAX_DIMS]; /* their lengths */
  int wraps[SIM_TORUS_MESH_MAX_DIMS]; /* per axis: 1 if it wraps around */
  int inner[SIM_TORUS_MESH_MAX_DIMS]; /* per axis: its chips the model axis takes (a divisor of
                                         the length; 1 none, the length all) */
} sim_torus_mesh;

/* Places a mesh of model x (product of dims / model) devices on the torus of ndims (1..8) axes
** dims, wraps. Returns 0 with *tm set, or -1 when model does not divide the torus's size. */
int sim_torus_mesh_place(sim_torus_mesh *tm, int ndims, const int *dims, const int *wraps, int model);

/* The torus rank of mesh position (data index d, model index m): m counts over the model's
** parts of the axes, d over the data's, each with axis 0 fastest. */
int sim_torus_mesh_rank(const sim_torus_mesh *tm, int d, int m);

/* The torus of a line along the mesh's model axis (model 1) or data axis (model 0): its axes
** longer than 1 in torus order, each wrapping where the line has the whole of a wrapping axis,
** or, for the data axis, where it has every `inner`-th chip of one (its steps are inner links
** long). Fills dims and wraps (SIM_TORUS_MESH_MAX_DIMS entries at most) and returns the axes, at
** least 1 (a line of one device: one axis of length 1). Member i of the line (in
** sim_torus_mesh_rank's index) is rank i of that torus. */
int sim_torus_mesh_line(const sim_torus_mesh *tm, int model, int *dims, int *wraps);

#endif
