package org.heapwatch.e2e;

import java.io.Serializable;

/**
 * The shopping cart every visitor gets in their HTTP session. A compact cart: up to four lines are kept
 * inline (sku, quantity, unit price), totals are kept in cents, so one cart is one object of about
 * 230 bytes (compressed oops) plus its customer id.
 */
public final class ShoppingCart implements Serializable {
  private static final long serialVersionUID = 1L;

  final String sessionId;
  final String customerId;
  String currency = "EUR";
  String locale = "en-GB";
  String couponCode;
  String shippingMethod = "standard";
  String shippingCountry = "DE";
  String shippingPostcode;
  final long createdMillis;
  long updatedMillis;
  long checkoutDeadlineMillis;
  long subtotalCents, discountCents, taxCents, shippingCents, totalCents;
  long loyaltyPointsEarned, loyaltyPointsSpent, giftCardCents;
  int itemCount, distinctItems, revision, failedPayments;
  boolean giftWrap, expressDelivery, newsletter, guestCheckout = true;
  long sku0, sku1, sku2, sku3;
  int qty0, qty1, qty2, qty3;
  long price0, price1, price2, price3;

  ShoppingCart(String sessionId, String customerId, long now) {
    this.sessionId = sessionId;
    this.customerId = customerId;
    this.createdMillis = now;
    this.updatedMillis = now;
    this.checkoutDeadlineMillis = now + 30 * 60 * 1000L;
  }

  /** Adds a line (the first free one of four) and recomputes the totals. */
  void add(long sku, int qty, long unitPriceCents) {
    switch (distinctItems) {
      case 0: sku0 = sku; qty0 = qty; price0 = unitPriceCents; break;
      case 1: sku1 = sku; qty1 = qty; price1 = unitPriceCents; break;
      case 2: sku2 = sku; qty2 = qty; price2 = unitPriceCents; break;
      case 3: sku3 = sku; qty3 = qty; price3 = unitPriceCents; break;
      default: return;
    }
    distinctItems++;
    itemCount += qty;
    revision++;
    subtotalCents = qty0 * price0 + qty1 * price1 + qty2 * price2 + qty3 * price3;
    taxCents = subtotalCents * 19 / 100;
    shippingCents = subtotalCents >= 5000 ? 0 : 495;
    totalCents = subtotalCents - discountCents + taxCents + shippingCents;
    loyaltyPointsEarned = totalCents / 100;
    updatedMillis = System.currentTimeMillis();
  }
}
