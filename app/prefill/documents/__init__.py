"""Documents a chat can ask about: read, cut by their structure, indexed and searched (no Qt).

`readers/` is the door: `read_document` turns a file (PDF, DOCX, HTML, Markdown, text, source code,
CSV) into a `Document` of typed blocks, and every fault into a `DocumentError` in words, bounded by
`ReadLimits` before the work. `chunking` cuts a document into token-sized passages by its headings,
paragraphs, code blocks and tables. `index` keeps collections, files, chunks, their FTS5 text and their
vectors in SQLite (`documents.sqlite3` beside the history); `indexer` is the resumable job that fills it;
`search` finds passages by vectors, by words, or both fused; `sources` turns passages into the numbered
sources a prompt carries and keeps only the citations that point at one.
"""
