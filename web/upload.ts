import { ApiError } from './api'

/**
 * PUTs a file to a signed upload URL the API granted, with upload progress (fetch has none for request bodies). The
 * URL is taken on the console's own origin: the server may name itself by its PUBLIC_URL, which the browser may not
 * reach the same way, and the CSP lets the console talk to its own origin only.
 */
export function putWithProgress(
  uploadUrl: string,
  file: File,
  contentType: string,
  onProgress: (fraction: number) => void,
): Promise<void> {
  const target = new URL(uploadUrl, window.location.origin)
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest()
    request.open('PUT', `${target.pathname}${target.search}`)
    request.setRequestHeader('content-type', contentType)
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total)
    }
    request.onload = () =>
      request.status < 300 ? resolve() : reject(new ApiError(request.status, detailOf(request.responseText)))
    request.onerror = () => reject(new ApiError(0, 'The upload failed: the server could not be reached'))
    request.send(file)
  })
}

const detailOf = (text: string) => {
  try {
    return JSON.parse(text).detail ?? text
  } catch {
    return text
  }
}
