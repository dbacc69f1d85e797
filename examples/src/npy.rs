//! Writing draws as NumPy `.npy` files.
