//! The full check of a d-tree file: every node read in file order (section 4.1: a sequential
//! scan from the first node reads them all), checksums, key order across the leaves, the
//! counts of the footer, internal nodes' children against the nodes they point to, the
//! in-memory leaf index, the Bloom filter against every key, and zero padding everywhere.

use std::collections::HashMap;

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::Decode;
use lamina_core::{Error, Result};

use super::format::{FOOTER_BYTES, NODE_HEADER_BYTES, NodeHeader, NodeKind, open_node};
use super::node::{children, leaf_entries};
use super::reader::{DTree, shift};
use crate::entry::entry_bytes;

/// What the scan learned of a node, for the check of the tree's shape.
#[derive(Debug)]
struct NodeSummary {
    level: u8,
    pages: u64,
    first_key: Vec<u8>,
    /// Internal nodes: (first key, page, pages) of each child.
    children: Vec<(Vec<u8>, u64, u64)>,
}

/// Totals of the leaves, compared with the footer.
#[derive(Debug, Default)]
struct Totals {
    entries: u64,
    deletes: u64,
    entry_bytes: u64,
    leaves: u64,
    internal_nodes: u64,
}

impl DTree {
    /// Reads and checks every node (order, counts, checksums, Bloom filter agrees).
    pub fn verify(&self) -> Result<()> {
        let nodes = self.verify_nodes()?;
        self.verify_shape(nodes)?;
        self.verify_tail()
    }

    fn corrupt(&self, offset: u64, reason: impl Into<String>) -> Error {
        Error::corruption(self.path(), offset, reason.into())
    }

    /// Scans the node section; checks each node and the leaves' order, index and counts.
    fn verify_nodes(&self) -> Result<HashMap<u64, NodeSummary>> {
        let f = &self.footer;
        let page_bytes = self.page_bytes();
        let mut nodes = HashMap::new();
        let mut totals = Totals::default();
        let mut last_key: Option<Vec<u8>> = None;
        let mut buf = vec![0u8; page_bytes as usize];
        let mut page = 0u64;
        while page < f.node_pages {
            let offset = page * page_bytes;
            buf.resize(page_bytes as usize, 0);
            self.read_at(offset, &mut buf)?;
            let header = NodeHeader::decode(&buf[..NODE_HEADER_BYTES])
                .map_err(|e| e.at(self.path(), offset))?;
            let pages = header.pages(f.page_bytes);
            if page + pages > f.node_pages {
                return Err(
                    self.corrupt(offset, format!("node of {pages} pages runs past the nodes"))
                );
            }
            if pages > 1 {
                buf.resize((pages * page_bytes) as usize, 0);
                self.read_at(offset + page_bytes, &mut buf[page_bytes as usize..])?;
            }
            let (header, payload) =
                open_node(&buf, page, self.id()).map_err(|e| e.at(self.path(), offset))?;
            if buf[NODE_HEADER_BYTES + payload.len()..].iter().any(|&b| b != 0) {
                return Err(self.corrupt(offset, "node padding is not zero"));
            }
            let summary = match header.kind {
                NodeKind::Leaf => {
                    self.verify_leaf(&header, payload, page, pages, &mut last_key, &mut totals)?
                }
                NodeKind::Internal => {
                    totals.internal_nodes += 1;
                    let mut kids = Vec::with_capacity(header.entries as usize);
                    for child in children(payload, header.entries) {
                        let child = child
                            .map_err(|e| shift(e, NODE_HEADER_BYTES).at(self.path(), offset))?;
                        kids.push((child.first_key.to_vec(), child.page, child.pages));
                    }
                    let first_key = kids[0].0.clone();
                    NodeSummary { level: header.level, pages, first_key, children: kids }
                }
            };
            nodes.insert(page, summary);
            page += pages;
        }
        let expected = (f.entries, f.deletes, f.entry_bytes, f.leaves, f.internal_nodes);
        let found = (
            totals.entries,
            totals.deletes,
            totals.entry_bytes,
            totals.leaves,
            totals.internal_nodes,
        );
        if expected != found || self.leaves.len() as u64 != totals.leaves {
            return Err(self.footer_error(format!(
                "(entries, deletes, bytes, leaves, internal nodes) {expected:?}, found {found:?}"
            )));
        }
        Ok(nodes)
    }

    fn verify_leaf(
        &self,
        header: &NodeHeader,
        payload: &[u8],
        page: u64,
        pages: u64,
        last_key: &mut Option<Vec<u8>>,
        totals: &mut Totals,
    ) -> Result<NodeSummary> {
        let offset = page * self.page_bytes();
        let leaf_no = totals.leaves as usize;
        if leaf_no >= self.leaves.len() || self.leaves.place(leaf_no) != (page, pages) {
            return Err(self.corrupt(offset, format!("leaf {leaf_no} is not in the leaf index")));
        }
        let mut first_key = None;
        let mut records = leaf_entries(payload, header.entries);
        loop {
            let at = records.position();
            let Some(entry) = records.next() else { break };
            let entry = entry.map_err(|e| shift(e, NODE_HEADER_BYTES).at(self.path(), offset))?;
            let at = offset + (NODE_HEADER_BYTES + at) as u64;
            if last_key.as_deref().is_some_and(|last| entry.key <= last) {
                return Err(self.corrupt(at, "keys do not ascend"));
            }
            if !self.bloom.may_contain(entry.key) {
                return Err(self.corrupt(at, "the Bloom filter rules out a key the d-tree holds"));
            }
            totals.entries += 1;
            totals.deletes += u64::from(entry.value.is_none());
            totals.entry_bytes += entry_bytes(entry.key.len(), entry.value.map(<[u8]>::len));
            first_key.get_or_insert_with(|| entry.key.to_vec());
            let last = last_key.get_or_insert_with(Vec::new);
            last.clear();
            last.extend_from_slice(entry.key);
        }
        let first_key = first_key.expect("a leaf has entries");
        if leaf_no > 0 && self.leaves.key(leaf_no) != &first_key[..] {
            return Err(self.corrupt(offset, "leaf index key differs from the leaf's first key"));
        }
        totals.leaves += 1;
        Ok(NodeSummary { level: 0, pages, first_key, children: Vec::new() })
    }

    /// From the root down: every node is reached exactly once, at the level, place and first
    /// key its parent gives, and children ascend by key and lie before their parent.
    fn verify_shape(&self, mut nodes: HashMap<u64, NodeSummary>) -> Result<()> {
        let f = &self.footer;
        let page_bytes = self.page_bytes();
        if f.height == 0 {
            return Ok(());
        }
        let mut stack = vec![(f.root_page, f.root_pages, f.height - 1, None::<Vec<u8>>)];
        while let Some((page, pages, level, key)) = stack.pop() {
            let offset = page * page_bytes;
            let Some(node) = nodes.remove(&page) else {
                return Err(self.corrupt(offset, "no node (or a node reached twice) here"));
            };
            if node.pages != pages || u32::from(node.level) != level {
                return Err(self.corrupt(offset, format!(
                    "node of {} pages at level {}; its parent says {pages} pages at level {level}",
                    node.pages, node.level
                )));
            }
            if key.is_some_and(|k| k != node.first_key) {
                return Err(self.corrupt(offset, "first key differs from the parent's"));
            }
            for (i, (child_key, child_page, child_pages)) in node.children.iter().enumerate() {
                if i > 0 && *child_key <= node.children[i - 1].0 {
                    return Err(self.corrupt(offset, "child keys do not ascend"));
                }
                if *child_page >= page {
                    return Err(self.corrupt(offset, "child after its parent"));
                }
                stack.push((*child_page, *child_pages, level - 1, Some(child_key.clone())));
            }
        }
        if let Some(page) = nodes.keys().min() {
            return Err(self.corrupt(page * page_bytes, "node not reachable from the root"));
        }
        Ok(())
    }

    /// The Bloom section (checksum, padding) and the footer page's padding.
    fn verify_tail(&self) -> Result<()> {
        let f = &self.footer;
        let page_bytes = self.page_bytes();
        let offset = f.bloom_page * page_bytes;
        let len = self.file_bytes() - offset;
        let mut buf = vec![0u8; usize::try_from(len).expect("the Bloom section fits memory")];
        self.read_at(offset, &mut buf)?;
        let bloom_bytes = f.bloom_bytes as usize;
        if masked_crc32c(&buf[..bloom_bytes]) != f.bloom_crc {
            return Err(self.corrupt(offset, "Bloom filter checksum mismatch"));
        }
        let footer_at = buf.len() - FOOTER_BYTES;
        if buf[bloom_bytes..footer_at].iter().any(|&b| b != 0) {
            return Err(self.corrupt(offset + bloom_bytes as u64, "padding is not zero"));
        }
        Ok(())
    }
}
