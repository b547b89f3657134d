/* The native half of a kernel launch: pack already-checked argument values into a kernel's
 * parameter slots and call cuLaunchKernel, in one C call.
 *
 * Why C: through ctypes, a cuLaunchKernel with its 11 arguments costs about a microsecond of
 * argument conversion on top of the driver, and struct.pack_into another fraction; here both
 * are a few loads and stores. Everything that needs judgement (type, dtype, device, contiguity
 * and alignment checks, error messages naming the argument) stays in Python
 * (runtime/launcher.py); this file only copies numbers.
 *
 * It needs no CUDA header: the address of libcuda's cuLaunchKernel comes from Python
 * (ctypes), so a test can hand in any function of the same C signature.
 *
 *   L = Launcher(cu_launch_address, function_handle, (bx, by, bz), shared_bytes, kinds, on_error)
 *   L.launch(gx, gy, gz, values, stream)      # values: list/tuple, one per kind
 *
 * kinds: one character per parameter: 'Q' u64 (pointers), 'q' i64, 'i' i32, 'I' u32, 'f' f32,
 * 't' a 128-byte tensor map (bytes). A non-zero driver result calls on_error(rc, gx, gy, gz),
 * which raises. The GIL is held throughout, so two threads never interleave packing and
 * launching one kernel's shared slots.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef int (*cu_launch_fn)(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shared, void *stream,
                            void **params, void **extra);

enum { TMAP_BYTES = 128, TMAP_ALIGN = 64, SLOT_BYTES = 8 };

typedef struct {
  PyObject_HEAD
  cu_launch_fn cu_launch;
  void *function;
  unsigned block[3];
  unsigned shared;
  Py_ssize_t count;
  char *kinds;
  unsigned char *storage; /* malloc'd; slots start at an aligned offset inside it */
  void **params;
  PyObject *on_error;
} Launcher;

static void launcher_dealloc(Launcher *self) {
  Py_XDECREF(self->on_error);
  PyMem_Free(self->kinds);
  PyMem_Free(self->storage);
  PyMem_Free(self->params);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int valid_kind(char k) {
  return k == 'Q' || k == 'q' || k == 'i' || k == 'I' || k == 'f' || k == 't';
}

static int launcher_init(Launcher *self, PyObject *args, PyObject *kwds) {
  static char *names[] = {"cu_launch", "function", "block", "shared", "kinds", "on_error", NULL};
  unsigned long long cu_launch = 0, function = 0;
  unsigned bx = 1, by = 1, bz = 1, shared = 0;
  const char *kinds = NULL;
  Py_ssize_t count = 0;
  PyObject *on_error = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "KK(III)Is#|O", names, &cu_launch, &function, &bx,
                                   &by, &bz, &shared, &kinds, &count, &on_error))
    return -1;
  if (!cu_launch) {
    PyErr_SetString(PyExc_ValueError, "Launcher: cu_launch address is 0");
    return -1;
  }
  size_t size = 0;
  size_t *offsets = PyMem_Malloc(sizeof(size_t) * (count ? count : 1));
  if (!offsets) {
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < count; i++) {
    if (!valid_kind(kinds[i])) {
      PyMem_Free(offsets);
      PyErr_Format(PyExc_ValueError, "Launcher: unknown param kind '%c' at %zd", kinds[i], i);
      return -1;
    }
    if (kinds[i] == 't') {
      size = (size + TMAP_ALIGN - 1) / TMAP_ALIGN * TMAP_ALIGN;
      offsets[i] = size;
      size += TMAP_BYTES;
    } else {
      offsets[i] = size;
      size += SLOT_BYTES;
    }
  }
  /* room to align the first slot to TMAP_ALIGN inside a plain allocation */
  unsigned char *storage = PyMem_Malloc(size + TMAP_ALIGN);
  void **params = PyMem_Malloc(sizeof(void *) * (count ? count : 1));
  char *kind_copy = PyMem_Malloc(count ? count : 1);
  if (!storage || !params || !kind_copy) {
    PyMem_Free(offsets);
    PyMem_Free(storage);
    PyMem_Free(params);
    PyMem_Free(kind_copy);
    PyErr_NoMemory();
    return -1;
  }
  memset(storage, 0, size + TMAP_ALIGN);
  unsigned char *base =
      (unsigned char *)(((uintptr_t)storage + TMAP_ALIGN - 1) / TMAP_ALIGN * TMAP_ALIGN);
  for (Py_ssize_t i = 0; i < count; i++) params[i] = base + offsets[i];
  memcpy(kind_copy, kinds, count);
  PyMem_Free(offsets);

  PyMem_Free(self->kinds);
  PyMem_Free(self->storage);
  PyMem_Free(self->params);
  self->cu_launch = (cu_launch_fn)(uintptr_t)cu_launch;
  self->function = (void *)(uintptr_t)function;
  self->block[0] = bx;
  self->block[1] = by;
  self->block[2] = bz;
  self->shared = shared;
  self->count = count;
  self->kinds = kind_copy;
  self->storage = storage;
  self->params = params;
  Py_INCREF(on_error);
  Py_XSETREF(self->on_error, on_error);
  return 0;
}

/* Write one value into its slot; -1 with a Python error set when it does not fit. */
static int store(char kind, void *slot, PyObject *v, Py_ssize_t index) {
  switch (kind) {
    case 'Q': {
      unsigned long long x = PyLong_AsUnsignedLongLong(v);
      if (x == (unsigned long long)-1 && PyErr_Occurred()) break;
      memcpy(slot, &x, 8);
      return 0;
    }
    case 'q': {
      long long x = PyLong_AsLongLong(v);
      if (x == -1 && PyErr_Occurred()) break;
      memcpy(slot, &x, 8);
      return 0;
    }
    case 'i':
    case 'I': {
      /* 32-bit slots: i32 takes INT32_MIN..INT32_MAX, u32 0..UINT32_MAX (low 4 bytes stored) */
      long long x = PyLong_AsLongLong(v);
      if (x == -1 && PyErr_Occurred()) break;
      int is_signed = kind == 'i';
      if (is_signed ? (x < INT32_MIN || x > INT32_MAX) : (x < 0 || x > UINT32_MAX)) {
        PyErr_Format(PyExc_OverflowError, "argument #%zd = %lld does not fit in %s", index, x,
                     is_signed ? "i32" : "u32");
        return -1;
      }
      uint32_t y = (uint32_t)x;
      memcpy(slot, &y, 4);
      return 0;
    }
    case 'f': {
      double x = PyFloat_AsDouble(v);
      if (x == -1.0 && PyErr_Occurred()) break;
      float y = (float)x;
      memcpy(slot, &y, 4);
      return 0;
    }
    case 't': {
      char *bytes;
      Py_ssize_t n;
      if (!PyBytes_Check(v) || PyBytes_AsStringAndSize(v, &bytes, &n) < 0 || n != TMAP_BYTES) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "argument #%zd must be a %d-byte tensor map (bytes)", index,
                     (int)TMAP_BYTES);
        return -1;
      }
      memcpy(slot, bytes, TMAP_BYTES);
      return 0;
    }
  }
  if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_OverflowError)) {
    PyObject *type = PyErr_ExceptionMatches(PyExc_OverflowError) ? PyExc_OverflowError
                                                                 : PyExc_TypeError;
    PyErr_Clear();
    PyErr_Format(type, "argument #%zd (kind '%c') cannot be packed from %R", index, kind, v);
  }
  return -1;
}

static unsigned grid_dim(PyObject *v, int *failed) {
  unsigned long x = PyLong_AsUnsignedLong(v);
  if ((x == (unsigned long)-1 && PyErr_Occurred()) || x > UINT32_MAX) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_OverflowError, "grid dimension exceeds 2**32-1");
    *failed = 1;
    return 0;
  }
  return (unsigned)x;
}

static PyObject *launcher_launch(Launcher *self, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 5) {
    PyErr_SetString(PyExc_TypeError, "launch(gx, gy, gz, values, stream) takes 5 arguments");
    return NULL;
  }
  int failed = 0;
  unsigned gx = grid_dim(args[0], &failed), gy = grid_dim(args[1], &failed),
           gz = grid_dim(args[2], &failed);
  if (failed) return NULL;
  PyObject *values = args[3];
  PyObject **items;
  Py_ssize_t n;
  if (PyList_CheckExact(values)) {
    items = ((PyListObject *)values)->ob_item;
    n = PyList_GET_SIZE(values);
  } else if (PyTuple_CheckExact(values)) {
    items = ((PyTupleObject *)values)->ob_item;
    n = PyTuple_GET_SIZE(values);
  } else {
    PyErr_SetString(PyExc_TypeError, "launch: values must be a list or a tuple");
    return NULL;
  }
  if (n != self->count) {
    PyErr_Format(PyExc_TypeError, "launch: the kernel takes %zd parameters, got %zd values",
                 self->count, n);
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++)
    if (store(self->kinds[i], self->params[i], items[i], i) < 0) return NULL;
  void *stream = PyLong_AsVoidPtr(args[4]);
  if (stream == NULL && PyErr_Occurred()) return NULL;
  int rc = self->cu_launch(self->function, gx, gy, gz, self->block[0], self->block[1],
                           self->block[2], self->shared, stream, self->params, NULL);
  if (rc != 0) {
    if (self->on_error == Py_None) {
      PyErr_Format(PyExc_RuntimeError, "cuLaunchKernel failed with CUDA error %d", rc);
      return NULL;
    }
    PyObject *r = PyObject_CallFunction(self->on_error, "iIII", rc, gx, gy, gz);
    if (r == NULL) return NULL;
    Py_DECREF(r);
    PyErr_Format(PyExc_RuntimeError, "cuLaunchKernel failed with CUDA error %d", rc);
    return NULL;
  }
  Py_RETURN_NONE;
}

static PyObject *launcher_slot_bytes(Launcher *self, PyObject *index_obj) {
  /* The bytes now in one parameter slot (tests read what a launch packed). */
  Py_ssize_t i = PyLong_AsSsize_t(index_obj);
  if (i == -1 && PyErr_Occurred()) return NULL;
  if (i < 0 || i >= self->count) {
    PyErr_SetString(PyExc_IndexError, "slot index out of range");
    return NULL;
  }
  return PyBytes_FromStringAndSize(self->params[i], self->kinds[i] == 't' ? TMAP_BYTES : SLOT_BYTES);
}

static PyMethodDef launcher_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))launcher_launch, METH_FASTCALL,
     "launch(gx, gy, gz, values, stream): pack values and call cuLaunchKernel."},
    {"slot_bytes", (PyCFunction)launcher_slot_bytes, METH_O,
     "slot_bytes(i): the bytes of parameter slot i as last packed."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_sparsecc_launch.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_dealloc = (destructor)launcher_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A kernel's parameter slots and launch configuration, packed and launched in C.",
    .tp_methods = launcher_methods,
    .tp_init = (initproc)launcher_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_sparsecc_launch",
    .m_doc = "Pack kernel parameters and call cuLaunchKernel in C (see launch.c).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__sparsecc_launch(void) {
  if (PyType_Ready(&LauncherType) < 0) return NULL;
  PyObject *m = PyModule_Create(&module);
  if (m == NULL) return NULL;
  Py_INCREF(&LauncherType);
  if (PyModule_AddObject(m, "Launcher", (PyObject *)&LauncherType) < 0) {
    Py_DECREF(&LauncherType);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
