// A hash router: the page is always `/`, the route is the fragment (`#/runs/4?agent=2`), so the server serves one page.
import { useEffect, useState } from 'react'

export type Route = { path: string[]; params: URLSearchParams }

function currentRoute(): Route {
  const hash = window.location.hash.replace(/^#/, '') || '/'
  const [path, search = ''] = hash.split('?')
  return { path: path.split('/').filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(search) }
}

export function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute)
  useEffect(() => {
    const changed = () => setRoute(currentRoute())
    window.addEventListener('hashchange', changed)
    return () => window.removeEventListener('hashchange', changed)
  }, [])
  return route
}

export const href = (path: string, params?: Record<string, string | number | undefined>) => {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params ?? {}))
    if (value !== undefined && value !== '') search.set(name, String(value))
  const text = search.toString()
  return `#${path}${text ? `?${text}` : ''}`
}

export const navigate = (path: string, params?: Record<string, string | number | undefined>) => {
  window.location.hash = href(path, params).slice(1)
}
