"""Hugging Face search, downloads, the local model library, fit estimates. No Qt.

Entry points: `client.HubClient` (search, list a repository), `downloader.download_model`
and `manager.DownloadManager` (downloads), `library.ModelLibrary` (local models),
`fit.estimate_fit` with `hardware.machine_memory` and `remote_header.fetch_header`,
`bundled.bundled_model_path`. Errors: `errors.HubError` and its subclasses.
"""
