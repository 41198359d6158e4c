//! Content nodes (paper section 2): a key, its value and the sequence number of the write
//! that stored them, in **one** allocation — a 16-byte header followed by the key bytes and
//! the value bytes. One allocation instead of a node plus a byte buffer halves the
//! allocator calls per write and saves a pointer chase per read (the paper avoids `malloc`
//! altogether with its own memory manager; see `docs/results/trie.md`).
//!
//! [`ContentBox`] owns an unpublished node; [`Content`] borrows a published one, which is
//! immutable (read-copy-update) and freed only through epoch reclamation
//! ([`crate::node::retire_content`]).

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::{pool, slab};

/// The fixed part of a content node. The key and value bytes follow it.
#[repr(C, align(8))]
#[derive(Debug)]
pub(crate) struct Header {
    seq: u64,
    key_len: u16,
    /// Where the block came from: 0 for the C allocator (exact layout), `c + 1` for the
    /// slab's size class `c` ([`crate::slab`]).
    block_class: u16,
    value_len: u32,
}

const HEADER_BYTES: usize = std::mem::size_of::<Header>();
const _: () = assert!(HEADER_BYTES == 16 && std::mem::align_of::<Header>() == 8);
const _: () = assert!(lamina_core::limits::KEY_BYTES_MAX <= u16::MAX as usize);
const _: () = assert!(slab::CLASSES < u16::MAX as usize);

/// Per-allocation bookkeeping of a typical malloc, for memory estimates.
pub(crate) const ALLOCATOR_OVERHEAD_BYTES: usize = 16;

fn layout(key_len: usize, value_len: usize) -> Layout {
    Layout::from_size_align(HEADER_BYTES + key_len + value_len, 8)
        .expect("keys and values are bounded by the API limits")
}

/// An unpublished content node, owned.
pub(crate) struct ContentBox {
    ptr: NonNull<Header>,
}

impl std::fmt::Debug for ContentBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_content().fmt(f)
    }
}

impl ContentBox {
    /// A new node holding `key`, `value` and `seq`.
    pub(crate) fn new(key: &[u8], value: &[u8], seq: u64) -> ContentBox {
        let key_len = u16::try_from(key.len()).expect("keys are at most 1024 bytes");
        let value_len = u32::try_from(value.len()).expect("values are at most 4096 bytes");
        let layout = layout(key.len(), value.len());
        // Blocks from the huge-page slab, in the class rounding the size up (the C allocator
        // only once the slab is at its limit).
        let from_slab =
            slab::class_of(layout.size()).and_then(|class| Some((pool::alloc(class)?, class)));
        let (raw, block_class) = match from_slab {
            Some((block, class)) => {
                (block.as_ptr(), u16::try_from(class + 1).expect("classes fit in u16"))
            }
            // SAFETY: the layout's size is at least HEADER_BYTES > 0.
            None => (unsafe { alloc(layout) }, 0),
        };
        #[allow(clippy::cast_ptr_alignment)] // the layout asks for Header's alignment, 8
        let raw = raw.cast::<Header>();
        let Some(ptr) = NonNull::new(raw) else { handle_alloc_error(layout) };
        // SAFETY: `ptr` is a fresh block of at least `layout.size()` bytes (a slab class
        // rounds the size up) aligned to 8 (slab blocks to 16): the header
        // fits at its start and the key and value bytes right after, within the block;
        // the sources are caller slices, which cannot overlap a fresh block.
        unsafe {
            ptr.as_ptr().write(Header { seq, key_len, block_class, value_len });
            let data = ptr.as_ptr().cast::<u8>().add(HEADER_BYTES);
            std::ptr::copy_nonoverlapping(key.as_ptr(), data, key.len());
            std::ptr::copy_nonoverlapping(value.as_ptr(), data.add(key.len()), value.len());
        }
        ContentBox { ptr }
    }

    /// Bytes of memory a node of a `key_len`-byte key and a `value_len`-byte value takes, as
    /// [`Content::memory_bytes`] counts it (whether the slab serves it, or the C allocator).
    pub(crate) fn memory_bytes_of(key_len: usize, value_len: usize) -> u64 {
        let size = HEADER_BYTES + key_len + value_len;
        match slab::class_of(size) {
            Some(class) => slab::class_bytes(class) as u64,
            None => (size + ALLOCATOR_OVERHEAD_BYTES) as u64,
        }
    }

    /// Sets the sequence number; the node is not published yet, so nobody else reads it.
    pub(crate) fn set_seq(&mut self, seq: u64) {
        // SAFETY: we own the node exclusively (`&mut self`, not yet published).
        unsafe { (*self.ptr.as_ptr()).seq = seq };
    }

    /// A borrowed view.
    pub(crate) fn as_content(&self) -> Content<'_> {
        Content { ptr: self.ptr, _borrow: PhantomData }
    }

    /// Gives up ownership (the pointer goes into a slot).
    pub(crate) fn into_raw(self) -> *mut Header {
        let ptr = self.ptr.as_ptr();
        std::mem::forget(self);
        ptr
    }

    /// Takes ownership back.
    ///
    /// # Safety
    ///
    /// `ptr` came from [`ContentBox::into_raw`] and nobody else owns or will free it.
    pub(crate) unsafe fn from_raw(ptr: *mut Header) -> ContentBox {
        ContentBox { ptr: NonNull::new(ptr).expect("content pointers are never null") }
    }
}

impl Drop for ContentBox {
    fn drop(&mut self) {
        // SAFETY: we own the node; its header is initialized.
        let header = unsafe { self.ptr.as_ref() };
        match header.block_class {
            0 => {
                let layout = layout(usize::from(header.key_len), header.value_len as usize);
                // SAFETY: class 0 marks a block from `alloc` with exactly this layout (the
                // header names the lengths it was allocated with); we own it.
                unsafe { dealloc(self.ptr.as_ptr().cast(), layout) };
            }
            // SAFETY: a non-zero class marks a block from `pool::alloc(class - 1)`; we own
            // it, and it goes to this thread's free list (crate::pool) for the next node.
            class => unsafe { pool::free(self.ptr.cast(), usize::from(class) - 1) },
        }
    }
}

/// A content node, borrowed for `'a` (published nodes are immutable).
#[derive(Clone, Copy)]
pub(crate) struct Content<'a> {
    ptr: NonNull<Header>,
    _borrow: PhantomData<&'a Header>,
}

impl std::fmt::Debug for Content<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Content")
            .field("seq", &self.seq())
            .field("key", &self.key())
            .field("value_len", &self.value().len())
            .finish()
    }
}

impl<'a> Content<'a> {
    /// A view of the node at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` came from [`ContentBox::into_raw`] and the node stays allocated and unchanged
    /// for `'a`.
    pub(crate) unsafe fn from_ptr(ptr: *const Header) -> Content<'a> {
        let ptr = NonNull::new(ptr.cast_mut()).expect("content pointers are never null");
        Content { ptr, _borrow: PhantomData }
    }

    pub(crate) fn as_ptr(self) -> *const Header {
        self.ptr.as_ptr()
    }

    fn header(self) -> &'a Header {
        // SAFETY: the node is allocated, initialized and immutable for 'a (type invariant).
        unsafe { self.ptr.as_ref() }
    }

    fn bytes(self, offset: usize, len: usize) -> &'a [u8] {
        // SAFETY: the block holds HEADER_BYTES + key_len + value_len initialized bytes and
        // callers ask only for the key or the value range; immutable for 'a.
        unsafe {
            std::slice::from_raw_parts(
                self.ptr.as_ptr().cast::<u8>().add(HEADER_BYTES + offset),
                len,
            )
        }
    }

    pub(crate) fn key(self) -> &'a [u8] {
        self.bytes(0, usize::from(self.header().key_len))
    }

    pub(crate) fn value(self) -> &'a [u8] {
        let header = self.header();
        self.bytes(usize::from(header.key_len), header.value_len as usize)
    }

    /// Sequence number of the write that produced this version of the key.
    pub(crate) fn seq(self) -> u64 {
        self.header().seq
    }

    /// Bytes of memory the node holds: its slab block (class-rounded; the slab's idle bytes
    /// are counted apart, [`crate::pool::idle_bytes`]), or its C allocation plus an overhead
    /// estimate.
    pub(crate) fn memory_bytes(self) -> u64 {
        let header = self.header();
        let bytes = match header.block_class {
            0 => {
                HEADER_BYTES
                    + usize::from(header.key_len)
                    + header.value_len as usize
                    + ALLOCATOR_OVERHEAD_BYTES
            }
            class => slab::class_bytes(usize::from(class) - 1),
        };
        bytes as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_key_value_and_seq_in_one_block() {
        let mut owned = ContentBox::new(b"key", &[7u8; 4096], 3);
        assert_eq!(owned.as_content().key(), b"key");
        assert_eq!(owned.as_content().value(), &[7u8; 4096][..]);
        owned.set_seq(9);
        assert_eq!(owned.as_content().seq(), 9);
        let raw = owned.into_raw();
        // SAFETY: `raw` came from into_raw and is still owned by nobody else.
        let view = unsafe { Content::from_ptr(raw) };
        assert_eq!(view.memory_bytes(), 4160, "a slab block, class-rounded");
        // SAFETY: as above; taken back exactly once.
        drop(unsafe { ContentBox::from_raw(raw) });
        let empty = ContentBox::new(&[0u8; 1024], b"", 0);
        assert_eq!(empty.as_content().key().len(), 1024);
        assert!(empty.as_content().value().is_empty());
        assert_eq!(empty.as_content().memory_bytes(), 1088);
        let small = ContentBox::new(b"k", b"v", 0);
        assert_eq!(small.as_content().memory_bytes(), 32, "a small slab class, 16-byte steps");
        assert_eq!(small.as_content().value(), b"v");
    }
}
