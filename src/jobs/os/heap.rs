//! Handing the heap's free pages back to the system after a burst of work that freed much.
//!
//! Reading a large jobs root parses every meta.json on several threads: glibc gives each
//! thread an arena of its own, and what the parsing freed stays in those arenas, scattered
//! between the records kept, counted in the process's resident memory although nothing holds
//! it. Trimming returns every whole free page of every arena (not only the top of the main one)
//! to the system.

/// Returns the free pages of the heap to the system: a few milliseconds for a heap of hundreds
/// of megabytes, so called after work that freed much (a full read of the root, a scan of every
/// log), never per event. Does nothing where the allocator is not glibc's.
#[allow(
    unsafe_code,
    reason = "malloc_trim is a C function of glibc, which only Rust's unsafe can call; it takes no pointer"
)]
pub fn release_free_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: malloc_trim takes no pointer and only walks glibc's own arenas, each under
        // its lock: it may be called from any thread at any time.
        unsafe {
            malloc_trim(0);
        }
    }
}
