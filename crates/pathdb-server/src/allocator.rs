//! The allocator the `pathdb` binary (and the server's ceiling example) runs on: mimalloc,
//! asked the way C asks it.
//!
//! mimalloc rather than glibc's malloc: a server allocates and frees a few dozen small blocks per
//! request, from several threads, and glibc's malloc and free were a tenth of a get's
//! instructions (docs/benchmarks.md, "Gets against the ceiling").
//!
//! Not through the `mimalloc` crate's `MiMalloc`, which passes every request to
//! `mi_malloc_aligned`, alignment 1 or 8 included. mimalloc 3 serves that quickly only when a
//! block of the size is free on a page at hand and happens to be aligned; otherwise (every block
//! over 1 KiB: the connections' buffers, the routes' boxed futures, the commit's records; and
//! the first block of each fresh page) it takes a generic path that over-allocates by the
//! alignment and aligns inside the block. Under durable puts that was about 16 allocations a
//! put on the HTTP workers, 6% of their instructions (docs/benchmarks.md, "Puts before the
//! router, and the allocator asked as C asks it"). [`Allocator`] sends what any block of
//! `mi_malloc` already satisfies to `mi_malloc`, as Rust's own `System` allocator does with
//! `malloc`, and only the rest to the aligned calls.

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

/// mimalloc's `MI_MAX_ALIGN_SIZE`: every block `mi_malloc` returns is aligned to this, or, for
/// a smaller block, to the largest power of two that divides its size class (8 at least).
const MALLOC_ALIGN: usize = 16;

/// The global allocator of the `pathdb` binary: mimalloc (see the module's docs).
///
/// ```ignore
/// #[global_allocator]
/// static ALLOCATOR: pathdb_server::allocator::Allocator = pathdb_server::allocator::Allocator;
/// ```
pub struct Allocator;

/// Whether a block `mi_malloc(size)` returns is aligned as `layout` asks. mimalloc's size
/// classes are multiples of 8, and of 16 from 64 bytes up; a size that is a multiple of its
/// alignment (as every Rust type's is) lands in a class that is a multiple of it too, and pages
/// start their blocks 16-aligned.
fn malloc_aligns(align: usize, size: usize) -> bool {
    align <= MALLOC_ALIGN && align <= size && size.is_multiple_of(align)
}

// SAFETY: every call passes mimalloc's own functions what their contracts ask: sizes and
// alignments from a valid `Layout`, and pointers this allocator returned.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl's comment.
        unsafe {
            if malloc_aligns(layout.align(), layout.size()) {
                mi_malloc(layout.size()).cast()
            } else {
                mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl's comment.
        unsafe {
            if malloc_aligns(layout.align(), layout.size()) {
                mi_zalloc(layout.size()).cast()
            } else {
                mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: see the impl's comment; mimalloc frees aligned and plain blocks alike.
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: see the impl's comment.
        unsafe {
            if malloc_aligns(layout.align(), new_size) {
                mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes across mimalloc's small, medium and large classes, with every alignment up to a
    /// page that fits them.
    fn layouts() -> impl Iterator<Item = Layout> {
        let sizes = (1..=300).chain((304..=5000).step_by(16)).chain([
            8191,
            8192,
            65536,
            1 << 20,
            (1 << 20) + 8,
        ]);
        sizes.flat_map(|size| {
            [1, 2, 4, 8, 16, 32, 64, 128, 4096]
                .into_iter()
                .filter_map(move |align| Layout::from_size_align(size, align).ok())
        })
    }

    /// Every block is aligned as asked and keeps its bytes through growing and shrinking.
    #[test]
    fn blocks_are_aligned_as_asked_and_keep_their_bytes() {
        for layout in layouts() {
            let (size, align) = (layout.size(), layout.align());
            // SAFETY: nonzero sizes; each block is freed once, with the layout it has then.
            unsafe {
                let zeroed = Allocator.alloc_zeroed(layout);
                assert!(!zeroed.is_null());
                assert_eq!(zeroed as usize % align, 0, "zeroed {size} by {align}");
                assert!(
                    std::slice::from_raw_parts(zeroed, size)
                        .iter()
                        .all(|&b| b == 0)
                );
                Allocator.dealloc(zeroed, layout);

                let mut block = Allocator.alloc(layout);
                let mut now = layout;
                assert_eq!(block as usize % align, 0, "{size} by {align}");
                block.write_bytes(0xa5, size);
                for new_size in [size * 3, size.div_ceil(2).max(align)] {
                    block = Allocator.realloc(block, now, new_size);
                    assert_eq!(block as usize % align, 0, "{size} to {new_size} by {align}");
                    let kept = now.size().min(new_size);
                    assert!(
                        std::slice::from_raw_parts(block, kept)
                            .iter()
                            .all(|&b| b == 0xa5)
                    );
                    now = Layout::from_size_align(new_size, align).unwrap();
                    block.write_bytes(0xa5, new_size);
                }
                Allocator.dealloc(block, now);
            }
        }
    }

    /// Many blocks of one layout alive at once take fresh pages, whose first blocks are where a
    /// wrong rule would show.
    #[test]
    fn blocks_of_fresh_pages_are_aligned_too() {
        for layout in layouts().filter(|layout| layout.size() <= 5000) {
            let blocks: Vec<*mut u8> = (0..64)
                // SAFETY: nonzero sizes; freed below with the same layout.
                .map(|_| unsafe { Allocator.alloc(layout) })
                .collect();
            for &block in &blocks {
                assert!(!block.is_null());
                assert_eq!(block as usize % layout.align(), 0, "{layout:?}");
                // SAFETY: allocated above with this layout, freed once.
                unsafe { Allocator.dealloc(block, layout) };
            }
        }
    }

    #[test]
    fn only_sizes_that_are_multiples_of_a_small_alignment_go_to_malloc() {
        assert!(malloc_aligns(8, 24));
        assert!(malloc_aligns(16, 48));
        assert!(malloc_aligns(1, 1));
        assert!(!malloc_aligns(16, 24), "a 24-byte class is only 8-aligned");
        assert!(!malloc_aligns(16, 8), "smaller than its alignment");
        assert!(!malloc_aligns(32, 64), "beyond what malloc promises");
    }
}
