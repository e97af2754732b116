/**
 * What `work` settles to, or, once `ms` passed first, what `late()` returns (or throws). The timer never outlives the
 * race; `work` itself goes on unheard.
 */
export async function within<T>(work: Promise<T>, ms: number, late: () => T): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<T>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(late())
      } catch (error) {
        reject(error)
      }
    }, ms)
  })
  try {
    return await Promise.race([work, deadline])
  } finally {
    clearTimeout(timer)
  }
}
