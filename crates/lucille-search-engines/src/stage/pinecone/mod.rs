//! The Pinecone plugin's stages (Lucille's lucille-pinecone), over `crate::pinecone`.

pub mod emit_docs_to_delete_by_prefix;

#[cfg(test)]
mod tests;
