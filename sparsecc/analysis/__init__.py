"""Shared GPU models: what the ttg passes and the lowering to PTX both need to know.

- `layouts`: which thread holds which element of a distributed (`#ttg.blocked`, `#ttg.mma`,
  `#ttg.slice`) tensor, and where a `#ttg.shared` tile stores it;
- `swizzle`: the XOR-swizzle arithmetic of shared tiles, TMA boxes and wgmma descriptors (one
  implementation, on ints, numpy arrays or IR-building values alike; a leaf the dialects use);
- `tma`: which block-pointer copies the tensor memory accelerator can do, and the tensor-map
  recipes the launcher evaluates;
- `divisibility`: what every launch's integer values are provably multiples of;
- `kloops`: which loops carry a dot's sum across iterations (K loops, persistent epilogues);
- `dtypes`: element sizes.

Layering: these modules read IR (they may import `sparsecc.dialects`), never passes, codegen,
runtime or the frontend, so both `sparsecc.passes` and `sparsecc.codegen` build on them without
importing each other. `test/python/test_imports.py` checks it.
"""
