"""sparsecc: 2:4 structured sparsity as a first-class tensor encoding."""
