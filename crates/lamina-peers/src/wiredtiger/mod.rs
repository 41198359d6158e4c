pub(crate) fn open(
    _peer: crate::PeerName,
    _dir: &std::path::Path,
    _o: &crate::PeerOptions,
) -> lamina_core::Result<crate::common::Peer<crate::bdb::BdbT>> {
    unimplemented!()
}
