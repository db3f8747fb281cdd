package org.heapwatch.e2e;

/**
 * A product page rendered once and served from the page cache: the encoded body plus the metadata the
 * servlet needs to answer conditional requests and to report render statistics. One object of about
 * 230 bytes (compressed oops) plus its body.
 */
public final class RenderedPage {
  final String key;
  final String contentType = "text/html;charset=UTF-8";
  final String etag;
  final String language = "en";
  final String template = "product";
  final byte[] body;
  final long productId;
  final long renderedAtMillis;
  long lastServedMillis;
  final long renderNanos;
  long hits;
  long bytesServed;
  long priceCents, listPriceCents, stockUnits, reviewCount, categoryId, brandId, variantId, warehouseId;
  long templateNanos, dataNanos, encodeNanos, expiresAtMillis, lastModifiedMillis, sellerId, shippingClassId,
      taxClassId;
  int status = 200;
  int maxAgeSeconds = 60;
  int ratingTenths;
  int imageCount;
  boolean inStock, onSale, compressed, personalized;

  RenderedPage(String key, long productId, byte[] body, long renderNanos) {
    this.key = key;
    this.productId = productId;
    this.body = body;
    this.renderNanos = renderNanos;
    this.renderedAtMillis = System.currentTimeMillis();
    this.lastServedMillis = renderedAtMillis;
    this.etag = "W/\"" + Long.toHexString(productId * 31 + body.length) + "\"";
    this.priceCents = 999 + productId % 5000;
    this.listPriceCents = priceCents + 500;
    this.stockUnits = productId % 97;
    this.inStock = stockUnits > 0;
    this.onSale = productId % 7 == 0;
    this.reviewCount = productId % 1000;
    this.ratingTenths = (int) (productId % 50);
    this.categoryId = productId % 40;
    this.brandId = productId % 300;
  }
}
