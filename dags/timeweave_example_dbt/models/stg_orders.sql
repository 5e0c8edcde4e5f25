-- Orders as landed (landed_orders is the on-run-start view over landing/orders/*.csv).
select order_id, price, currency, order_time from landed_orders
