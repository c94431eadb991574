// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20Metadata} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Metadata.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Ownable2Step} from "@openzeppelin/contracts/access/Ownable2Step.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {ReceiptToken} from "./ReceiptToken.sol";

/// @notice Multi-asset vault with a separate receipt token. Deposits are accepted in the base
/// asset and in whitelisted assets at an owner-set rate; withdrawals are requested (shares go to
/// escrow), wait `lagDuration`, and are paid in the base asset at the price of processing.
contract TokenizedVaultV2 is Ownable2Step {
    using SafeERC20 for IERC20;

    event Deposit(
        address assetIn, uint256 amountIn, uint256 shares, address indexed senderAddr, address indexed receiverAddr
    );
    event Withdraw(
        address indexed sender, address indexed receiver, address indexed owner, uint256 assets, uint256 shares
    );
    event WithdrawalRequested(uint256 shares, address indexed holderAddr, address indexed receiverAddr);
    event WithdrawalProcessed(uint256 assetsAmount, address indexed receiverAddr);
    event SubAccountEnabled(address subAccountAddr);
    event SubAccountDisabled(address subAccountAddr);
    event ManagementFeeCharged(uint256 managementFeeAmount);
    event ManagementFeeUpdated(uint256 newManagementFeePercent);
    event MaxChangePercentUpdated(uint256 newValue);
    event FeesCollected();
    event DepositWithdrawalStatusChanged(bool bDepositsPaused, bool bWithdrawalsPaused);

    struct Request {
        address holder;
        address receiver;
        uint256 shares;
        uint256 requestedAt;
    }

    ReceiptToken private immutable _lpToken;
    IERC20Metadata public immutable baseAsset;
    uint8 private immutable _decimals;

    /// Base-asset value of one unit of a deposit asset, scaled by 1e18 (base asset: 1e18).
    mapping(address => uint256) public assetRate;
    address[] private _depositAssets;

    address public operator;
    address public feeCollector;
    uint256 public externalAssets;
    uint256 public lagDuration;
    uint256 public maxChangePercent; // basis points
    uint256 public managementFeePercent; // annual, basis points
    uint256 public performanceFeeRate; // basis points of gains above the high watermark
    uint256 public highWatermark; // share price, base-asset units per whole share
    uint256 public depositCap; // in base-asset units, 0 = none
    bool public depositsPaused;
    bool public withdrawalsPaused;
    uint256 public accruedFees;
    uint256 public lastFeeChargedOn;
    mapping(address => bool) public subAccounts;

    Request[] private _requests;
    uint256 public nextRequestToProcess;
    uint256 public escrowedShares;

    modifier onlyOperator() {
        require(msg.sender == operator, "VaultV2: not operator");
        _;
    }

    modifier onlyOwnerOrOperator() {
        require(msg.sender == operator || msg.sender == owner(), "VaultV2: not owner or operator");
        _;
    }

    constructor(
        IERC20Metadata baseAsset_,
        string memory lpName,
        string memory lpSymbol,
        address owner_,
        address operator_,
        address feeCollector_,
        uint256 lagDuration_,
        uint256 maxChangePercent_,
        uint256 managementFeePercent_,
        uint256 performanceFeeRate_,
        uint256 depositCap_
    ) Ownable(owner_) {
        baseAsset = baseAsset_;
        _decimals = baseAsset_.decimals();
        _lpToken = new ReceiptToken(lpName, lpSymbol, _decimals);
        operator = operator_;
        feeCollector = feeCollector_;
        lagDuration = lagDuration_;
        maxChangePercent = maxChangePercent_;
        managementFeePercent = managementFeePercent_;
        performanceFeeRate = performanceFeeRate_;
        depositCap = depositCap_;
        highWatermark = 10 ** _decimals;
        lastFeeChargedOn = block.timestamp;
        assetRate[address(baseAsset_)] = 1e18;
        _depositAssets.push(address(baseAsset_));
    }

    // ---- views -------------------------------------------------------------------------------

    function lpTokenAddress() external view returns (address) {
        return address(_lpToken);
    }

    function asset() external view returns (address) {
        return address(baseAsset);
    }

    function decimals() external view returns (uint8) {
        return _decimals;
    }

    function getDepositAssets() external view returns (address[] memory) {
        return _depositAssets;
    }

    function getTotalAssets() public view returns (uint256) {
        uint256 gross = externalAssets;
        for (uint256 i = 0; i < _depositAssets.length; i++) {
            address a = _depositAssets[i];
            gross += Math.mulDiv(IERC20(a).balanceOf(address(this)), assetRate[a], 1e18);
        }
        return gross > accruedFees ? gross - accruedFees : 0;
    }

    function totalAssets() external view returns (uint256) {
        return getTotalAssets();
    }

    function totalSupply() public view returns (uint256) {
        return _lpToken.totalSupply();
    }

    /// Base-asset units per whole share.
    function getSharePrice() public view returns (uint256) {
        uint256 supply = totalSupply();
        return supply == 0 ? 10 ** _decimals : Math.mulDiv(getTotalAssets(), 10 ** _decimals, supply);
    }

    function getWithdrawalEpoch() external view returns (uint256) {
        return block.timestamp + lagDuration;
    }

    function pendingRequests() external view returns (uint256) {
        return _requests.length - nextRequestToProcess;
    }

    // ---- holders -----------------------------------------------------------------------------

    function deposit(address assetIn, uint256 amountIn, address receiver) external returns (uint256 shares) {
        require(!depositsPaused, "VaultV2: deposits paused");
        uint256 rate = assetRate[assetIn];
        require(rate > 0, "VaultV2: asset not accepted");
        uint256 value = Math.mulDiv(amountIn, rate, 1e18);
        require(value > 0, "VaultV2: zero value");
        uint256 ta = getTotalAssets();
        require(depositCap == 0 || ta + value <= depositCap, "VaultV2: deposit cap");
        uint256 supply = totalSupply();
        shares = (supply == 0 || ta == 0) ? value : Math.mulDiv(value, supply, ta);
        require(shares > 0, "VaultV2: zero shares");
        IERC20(assetIn).safeTransferFrom(msg.sender, address(this), amountIn);
        _lpToken.mint(receiver, shares);
        emit Deposit(assetIn, amountIn, shares, msg.sender, receiver);
    }

    function requestWithdrawal(uint256 shares, address receiver) external {
        require(!withdrawalsPaused, "VaultV2: withdrawals paused");
        require(shares > 0, "VaultV2: zero shares");
        _lpToken.vaultTransfer(msg.sender, address(this), shares);
        escrowedShares += shares;
        _requests.push(Request(msg.sender, receiver, shares, block.timestamp));
        emit WithdrawalRequested(shares, msg.sender, receiver);
    }

    // ---- operator ----------------------------------------------------------------------------

    /// Pays every request whose lag has passed (up to maxLimit) at the current share price.
    function processAllClaims(uint256 maxLimit) external onlyOperator returns (uint256 count) {
        uint256 i = nextRequestToProcess;
        for (; i < _requests.length && count < maxLimit; i++) {
            Request storage r = _requests[i];
            if (r.requestedAt + lagDuration > block.timestamp) break;
            uint256 assets = Math.mulDiv(r.shares, getTotalAssets(), totalSupply());
            require(
                baseAsset.balanceOf(address(this)) >= accruedFees + assets, "VaultV2: insufficient liquidity"
            );
            escrowedShares -= r.shares;
            _lpToken.burn(address(this), r.shares);
            IERC20(address(baseAsset)).safeTransfer(r.receiver, assets);
            emit WithdrawalProcessed(assets, r.receiver);
            emit Withdraw(msg.sender, r.receiver, r.holder, assets, r.shares);
            count++;
        }
        nextRequestToProcess = i;
    }

    function updateTotalAssets(uint256 newExternalAssets) external onlyOperator {
        uint256 prev = externalAssets;
        if (prev > 0) {
            uint256 diff = newExternalAssets > prev ? newExternalAssets - prev : prev - newExternalAssets;
            require(diff * 10_000 <= prev * maxChangePercent, "VaultV2: change too large");
        }
        externalAssets = newExternalAssets;
        uint256 price = getSharePrice();
        if (price > highWatermark) highWatermark = price;
    }

    function depositToSubaccount(address assetAddr, uint256 amount, address subaccount) external onlyOperator {
        require(subAccounts[subaccount], "VaultV2: subaccount not enabled");
        uint256 rate = assetRate[assetAddr];
        require(rate > 0, "VaultV2: asset not accepted");
        if (assetAddr == address(baseAsset)) {
            require(baseAsset.balanceOf(address(this)) >= accruedFees + amount, "VaultV2: insufficient idle");
        }
        externalAssets += Math.mulDiv(amount, rate, 1e18);
        IERC20(assetAddr).safeTransfer(subaccount, amount);
    }

    function withdrawFromSubaccount(uint256 amount, address subaccount) external onlyOperator {
        require(subAccounts[subaccount], "VaultV2: subaccount not enabled");
        externalAssets = externalAssets > amount ? externalAssets - amount : 0;
        IERC20(address(baseAsset)).safeTransferFrom(subaccount, address(this), amount);
    }

    function chargeManagementFee() external onlyOperator returns (uint256 amount) {
        uint256 elapsed = block.timestamp - lastFeeChargedOn;
        amount = Math.mulDiv(getTotalAssets(), managementFeePercent * elapsed, 10_000 * 365 days);
        lastFeeChargedOn = block.timestamp;
        accruedFees += amount;
        emit ManagementFeeCharged(amount);
    }

    function collectFees() external onlyOperator {
        uint256 amount = accruedFees;
        require(amount > 0, "VaultV2: no fees");
        require(baseAsset.balanceOf(address(this)) >= amount, "VaultV2: insufficient idle");
        accruedFees = 0;
        IERC20(address(baseAsset)).safeTransfer(feeCollector, amount);
        emit FeesCollected();
    }

    function pauseDepositsAndWithdrawals(bool pauseDeposits, bool pauseWithdrawals) external onlyOwnerOrOperator {
        depositsPaused = pauseDeposits;
        withdrawalsPaused = pauseWithdrawals;
        emit DepositWithdrawalStatusChanged(pauseDeposits, pauseWithdrawals);
    }

    // ---- owner (the timelock) ----------------------------------------------------------------

    function enableSubAccount(address subaccount) external onlyOwner {
        subAccounts[subaccount] = true;
        emit SubAccountEnabled(subaccount);
    }

    function disableSubAccount(address subaccount) external onlyOwner {
        subAccounts[subaccount] = false;
        emit SubAccountDisabled(subaccount);
    }

    function setAssetRate(address assetAddr, uint256 rate) external onlyOwner {
        require(IERC20Metadata(assetAddr).decimals() == _decimals, "VaultV2: decimals differ");
        if (assetRate[assetAddr] == 0 && rate > 0) _depositAssets.push(assetAddr);
        assetRate[assetAddr] = rate;
    }

    function updateOperator(address newOperator) external onlyOwner {
        operator = newOperator;
    }

    function updateManagementFee(uint256 newPercent) external onlyOwner {
        require(newPercent <= 1_000, "VaultV2: fee too high");
        managementFeePercent = newPercent;
        emit ManagementFeeUpdated(newPercent);
    }

    function updateMaxChangePercent(uint256 newValue) external onlyOwner {
        maxChangePercent = newValue;
        emit MaxChangePercentUpdated(newValue);
    }

    function updateDepositCap(uint256 newCap) external onlyOwner {
        depositCap = newCap;
    }
}
