import { checkoutAction } from '@/lib/payments/actions';
import { getStripePrices, getStripeProducts } from '@/lib/payments/stripe';

// Prices are fresh for one hour max
export const revalidate = 3600;

export default async function PricingPage() {
  const [prices, products] = await Promise.all([getStripePrices(), getStripeProducts()]);

  const basePlan = products.find((product) => product.name === 'Base');
  const plusPlan = products.find((product) => product.name === 'Plus');
  const basePrice = prices.find((price) => price.productId === basePlan?.id);
  const plusPrice = prices.find((price) => price.productId === plusPlan?.id);

  return (
    <main className="max-w-4xl mx-auto px-4 py-12 grid md:grid-cols-2 gap-8">
      {[
        { name: basePlan?.name || 'Base', price: basePrice },
        { name: plusPlan?.name || 'Plus', price: plusPrice }
      ].map(({ name, price }) => (
        <form key={name} action={checkoutAction} className="rounded-lg border p-6">
          <h2 className="text-2xl font-medium">{name}</h2>
          <p className="text-4xl font-medium my-4">${(price?.unitAmount ?? 0) / 100}</p>
          <input type="hidden" name="priceId" value={price?.id} />
          <button type="submit" className="w-full rounded-full bg-gray-900 text-white py-2">
            Get started
          </button>
        </form>
      ))}
    </main>
  );
}
