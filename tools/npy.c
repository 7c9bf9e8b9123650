/* STUB: replaced by the .npy reader/writer. */
typedef int npy_placeholder_;
