import { stripe } from '../payments/stripe';
import { hashPassword } from '@/lib/auth/session';
import { createUserWithTeam } from './queries';
import { client } from './drizzle';

async function createStripeProducts() {
  console.log('Creating Stripe products and prices...');
  const base = await stripe.products.create({ name: 'Base', description: 'Base subscription plan' });
  await stripe.prices.create({ product: base.id, unit_amount: 800, currency: 'usd', recurring: { interval: 'month', trial_period_days: 7 } });

  const plus = await stripe.products.create({ name: 'Plus', description: 'Plus subscription plan' });
  await stripe.prices.create({ product: plus.id, unit_amount: 1200, currency: 'usd', recurring: { interval: 'month', trial_period_days: 7 } });
}

async function seed() {
  await createUserWithTeam('test@test.com', await hashPassword('admin123'));
  console.log('Initial user created: test@test.com / admin123');
  await createStripeProducts();
}

seed()
  .catch((error) => {
    console.error('Seed process failed:', error);
    process.exit(1);
  })
  .finally(() => client.end());
