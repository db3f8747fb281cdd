package org.heapwatch.e2e;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpSession;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.concurrent.atomic.AtomicLong;

/**
 * "Add to cart": GET /shop/cart?sku=N puts the item into the visitor's ShoppingCart, kept in the HTTP session.
 * The load generator keeps no cookies, so every request is a new visitor with a new session.
 *
 * Context parameter "mode" (WEB-INF/web.xml):
 *   leak    - the webapp sets session-timeout -1 (web.xml): sessions never expire, every visitor's cart stays
 *             on the heap forever (the classic session leak);
 *   healthy - the visitor checks out within the request and the session is invalidated at its end.
 */
public final class CartServlet extends HttpServlet {
  private static final long serialVersionUID = 1L;
  private static final AtomicLong VISITORS = new AtomicLong();
  private boolean invalidateAtEnd;

  @Override
  public void init() {
    String mode = getServletContext().getInitParameter("mode");
    if (!"leak".equals(mode) && !"healthy".equals(mode)) {
      throw new IllegalStateException("context parameter mode must be leak or healthy, not " + mode);
    }
    invalidateAtEnd = "healthy".equals(mode);
    log("CartServlet mode " + mode);
  }

  @Override
  protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
    HttpSession session = req.getSession(true);
    ShoppingCart cart = (ShoppingCart) session.getAttribute("cart");
    if (cart == null) {
      long n = VISITORS.incrementAndGet();
      cart = new ShoppingCart(session.getId(), "guest-" + n, System.currentTimeMillis());
      session.setAttribute("cart", cart);
    }
    long sku = 100000;
    String p = req.getParameter("sku");
    if (p != null) {
      try {
        sku = Long.parseLong(p);
      } catch (NumberFormatException e) {
        resp.sendError(400, "bad sku");
        return;
      }
    }
    cart.add(sku, 1 + (int) (sku % 3), 999 + sku % 5000);
    resp.setContentType("text/html;charset=UTF-8");
    PrintWriter out = resp.getWriter();
    out.print("<!DOCTYPE html><html><head><title>Cart</title></head><body><p>");
    out.print(cart.itemCount);
    out.print(" item(s), total ");
    out.print(cart.totalCents / 100);
    out.print('.');
    out.print(cart.totalCents % 100);
    out.print(" ");
    out.print(cart.currency);
    out.print("</p></body></html>");
    if (invalidateAtEnd) session.invalidate();
  }
}
