package org.heapwatch.e2e;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

/**
 * Product pages: GET /pages/product?id=N&... renders the page of product N and caches the rendered page
 * under the request's URL (path and query string). Clients add tracking and cache-busting parameters
 * (utm_*, _=timestamp), so nearly every URL is new.
 *
 * Context parameter "mode" (WEB-INF/web.xml):
 *   leak    - the page cache is a static map without eviction: every distinct URL stays cached forever;
 *   healthy - the page cache is an LRU map bounded to "cacheEntries" pages (default 1000).
 */
public final class PageServlet extends HttpServlet {
  private static final long serialVersionUID = 1L;
  static final Map<String, RenderedPage> UNBOUNDED_CACHE = new ConcurrentHashMap<>();
  private Map<String, RenderedPage> cache;

  @Override
  public void init() {
    String mode = getServletContext().getInitParameter("mode");
    if ("leak".equals(mode)) {
      cache = UNBOUNDED_CACHE;
    } else if ("healthy".equals(mode)) {
      String p = getServletContext().getInitParameter("cacheEntries");
      final int max = p == null ? 1000 : Integer.parseInt(p);
      cache = Collections.synchronizedMap(new LinkedHashMap<String, RenderedPage>(max * 4 / 3 + 1, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, RenderedPage> eldest) {
          return size() > max;
        }
      });
    } else {
      throw new IllegalStateException("context parameter mode must be leak or healthy, not " + mode);
    }
    log("PageServlet mode " + mode);
  }

  @Override
  protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
    String query = req.getQueryString();
    String key = query == null ? req.getRequestURI() : req.getRequestURI() + "?" + query;
    RenderedPage page = cache.get(key);
    if (page == null) {
      long id;
      try {
        String p = req.getParameter("id");
        id = p == null ? 1 : Long.parseLong(p);
      } catch (NumberFormatException e) {
        resp.sendError(400, "bad id");
        return;
      }
      page = render(key, id);
      cache.put(key, page);
    }
    page.hits++;
    page.lastServedMillis = System.currentTimeMillis();
    page.bytesServed += page.body.length;
    resp.setContentType(page.contentType);
    resp.setHeader("ETag", page.etag);
    resp.setContentLength(page.body.length);
    resp.getOutputStream().write(page.body);
  }

  private static RenderedPage render(String key, long id) {
    long t0 = System.nanoTime();
    StringBuilder html = new StringBuilder(256);
    html.append("<!DOCTYPE html><html><head><title>Product ").append(id).append("</title></head><body>")
        .append("<h1>Product ").append(id).append("</h1><p>Price ").append((999 + id % 5000) / 100).append('.')
        .append((999 + id % 5000) % 100).append(" EUR</p></body></html>");
    byte[] body = html.toString().getBytes(StandardCharsets.UTF_8);
    return new RenderedPage(key, id, body, System.nanoTime() - t0);
  }
}
