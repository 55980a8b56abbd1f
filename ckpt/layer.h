/*
 * ckpt/layer.h — the writable layer of a registered `ursa do --id ID`
 * sandbox (a tmpfs on the host at ROOT/.do/ID, ROOT the state root), and
 * what a checkpoint image keeps of it (DIR/layer.img, DIR/layer.dev).
 * Details in ckpt/layer.c and docs/checkpoint.md.
 */
#ifndef URSA_CKPT_LAYER_H
#define URSA_CKPT_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ckpt/fstree.h"
#include "runtime/err.h"

/**
 * ckpt_layer_make() - mount a fresh tmpfs for sandbox @id's writable layer
 * @root: the state root
 * @id: the sandbox id
 * @fresh: with an empty upper/ (a new sandbox; a restore unpacks its own)
 * @path: gets ROOT/.do/ID
 * @len: its size
 * @err: what failed
 *
 * Return: 0, or a negative errno (-EEXIST: a sandbox with that id has one).
 */
int ckpt_layer_make(const char *root, const char *id, bool fresh, char *path, size_t len,
		    struct urs_err *err);

/**
 * ckpt_layer_remove() - unmount and remove sandbox @id's writable layer
 * @root: the state root
 * @id: the sandbox id
 * @err: what failed (may be NULL)
 *
 * Return: 0 (also when there is none) or a negative errno.
 */
int ckpt_layer_remove(const char *root, const char *id, struct urs_err *err);

/**
 * ckpt_layer_of() - is @bundle the writable layer of sandbox @id?
 * @root: the state root
 * @id: the sandbox id
 * @bundle: its recorded bundle (may be NULL)
 *
 * Return: true if @bundle is exactly ROOT/.do/ID (a string comparison).
 */
bool ckpt_layer_of(const char *root, const char *id, const char *bundle);

/**
 * ckpt_layer_save() - save sandbox @id's layer into @image/layer.img (and
 *                     layer.dev), its tasks frozen
 * @root: the state root
 * @id: the sandbox id
 * @pid: its init (to see the layer's device as the sandbox does)
 * @image: the image directory
 * @stats: entries and bytes saved (may be NULL)
 * @err: what failed
 *
 * Return: 0 or a negative errno (nothing is left in @image then).
 */
int ckpt_layer_save(const char *root, const char *id, pid_t pid, const char *image,
		    struct urs_fstree_stats *stats, struct urs_err *err);

/**
 * ckpt_layer_in_image() - does the image in @image carry a writable layer?
 * @image: the image directory
 *
 * Return: true if @image/layer.img exists (nothing about it is checked).
 */
bool ckpt_layer_in_image(const char *image);

/**
 * ckpt_layer_load() - a fresh layer for sandbox @id, unpacked from @image
 * @root: the state root
 * @id: the sandbox id
 * @image: the image directory (its manifest checked by the caller)
 * @bundle: gets the layer's path, the bundle to restore with
 * @len: its size
 * @err: what failed
 *
 * Return: 0 or a negative errno (no layer is left then).
 */
int ckpt_layer_load(const char *root, const char *id, const char *image, char *bundle, size_t len,
		    struct urs_err *err);

#endif
