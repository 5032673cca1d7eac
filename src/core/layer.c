/* The lifecycle hook table (see layer.h): layers register from constructors, core walks the
 * table in slot order. Core knows the slots, never the layers behind them. */
#include "core/layer.h"
#include "core/comm.h"
#include "core/file.h"

static const pario_layer *layers[PARIO_SLOTS];

void pario_layer_register(int slot, const pario_layer *l) {
  if (slot >= 0 && slot < PARIO_SLOTS) layers[slot] = l;
}

void *pario_layer_state(const pario_file *f, int slot) { return f->layer_state[slot]; }
void pario_layer_set_state(pario_file *f, int slot, void *state) { f->layer_state[slot] = state; }

int pario_layers_open(pario_file *f) {
  int rc = MPI_SUCCESS;
  for (int i = 0; i < PARIO_SLOTS; i++)
    if (layers[i] && layers[i]->open) {
      int e = layers[i]->open(f, &f->layer_state[i]);
      if (rc == MPI_SUCCESS) rc = e;
    }
  return rc;
}

void pario_layers_view_votes(pario_file *f, long long votes[PARIO_SLOTS]) {
  for (int i = 0; i < PARIO_SLOTS; i++)
    votes[i] = layers[i] && layers[i]->view_vote ? layers[i]->view_vote(f, f->layer_state[i]) : 0;
}

int pario_layers_set_view(pario_file *f, const char *op, MPI_Offset *disp, const long long votes[PARIO_SLOTS]) {
  for (int i = 0; i < PARIO_SLOTS; i++)
    if (layers[i] && layers[i]->set_view) {
      int rc = layers[i]->set_view(f, f->layer_state[i], op, disp, votes[i]);
      if (rc != MPI_SUCCESS) return rc;
    }
  return MPI_SUCCESS;
}

void pario_layers_quiesce(pario_file *f) {
  for (int i = 0; i < PARIO_SLOTS; i++)
    if (layers[i] && layers[i]->quiesce) layers[i]->quiesce(f, f->layer_state[i]);
}

void pario_layers_set_info(pario_file *f) {
  for (int i = 0; i < PARIO_SLOTS; i++)
    if (layers[i] && layers[i]->set_info) layers[i]->set_info(f, f->layer_state[i]);
}

void pario_layers_get_info(pario_file *f, MPI_Info info) {
  for (int i = 0; i < PARIO_SLOTS; i++)
    if (layers[i] && layers[i]->get_info) layers[i]->get_info(f, f->layer_state[i], info);
}

/* sync and close: every hook runs even after one failed (each has data to flush or state to
 * finish, and each is collective); the first error is returned. */
typedef int (*finish_hook)(pario_file *f, void *state, const char *op);

static int walk_finish(pario_file *f, const char *op, int close) {
  int rc = MPI_SUCCESS;
  for (int i = 0; i < PARIO_SLOTS; i++) {
    finish_hook h = !layers[i] ? NULL : close ? layers[i]->close : layers[i]->sync;
    if (h) {
      int e = h(f, f->layer_state[i], op);
      if (rc == MPI_SUCCESS) rc = e;
    }
  }
  return rc;
}

int pario_layers_sync(pario_file *f, const char *op) { return walk_finish(f, op, 0); }

int pario_layers_close(pario_file *f, const char *op) { return walk_finish(f, op, 1); }

/* After pario_timeout expired (core/comm.h) the layers' states are left allocated, released
 * by no hook: a release may communicate (sharedfp's is collective) and the collective
 * layer's buffers may still be written by the pending messages. The trace is flushed. */
void pario_layers_release(pario_file *f) {
  int stuck = pario_wait_stuck_ms() != 0;
  for (int i = PARIO_SLOTS - 1; i >= 0; i--) {
    if (layers[i] && layers[i]->release && (!stuck || i == PARIO_SLOT_TRACE)) layers[i]->release(f, f->layer_state[i]);
    f->layer_state[i] = NULL;
  }
}

void pario_layers_finalize(void) {
  for (int i = PARIO_SLOTS - 1; i >= 0; i--)
    if (layers[i] && layers[i]->finalize) layers[i]->finalize();
}
