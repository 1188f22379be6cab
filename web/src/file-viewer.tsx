import { useEffect, useRef } from 'react';
import { useLoader } from './use-loader.js';

export interface OpenFile {
  session: string;
  path: string;
}

/** A modal that shows a workspace file as text (the script's record files). */
export function FileViewer({ file, onClose }: { file: OpenFile; onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const content = useLoader((api) => api.file(file.session, file.path), `${file.session}\n${file.path}`);

  useEffect(() => {
    const element = dialog.current;
    if (element !== null && !element.open) element.showModal();
    return () => element?.close();
  }, []);

  return (
    <dialog ref={dialog} className="file-viewer" onClose={onClose} aria-labelledby="file-viewer-title">
      <header className="file-viewer-header">
        <h2 id="file-viewer-title">
          <code>{file.path}</code>
        </h2>
        <button type="button" className="button" onClick={() => dialog.current?.close()} autoFocus>
          Close
        </button>
      </header>
      {content.error !== undefined && (
        <p className="error" role="alert">
          {content.error}
        </p>
      )}
      {content.loading && content.data === undefined && <p className="muted">Loading…</p>}
      {content.data !== undefined && (
        <>
          {!content.data.eof && (
            <p className="muted">
              Showing the first {content.data.text.length.toLocaleString()} characters of{' '}
              {content.data.size.toLocaleString()} bytes.
            </p>
          )}
          <pre className="file-text" tabIndex={0}>
            {content.data.text === '' ? '(empty file)' : content.data.text}
          </pre>
        </>
      )}
    </dialog>
  );
}
